//! Flavors as Nova's `POST /flavors` takes them: the rules of each field, with Nova's
//! messages. The HTTP layer reads the body into [`FlavorFields`]; [`FlavorFields::check`]
//! gives the flavor to store, or why not (400).

/// The largest integer Nova's database takes (`SQL_INT_MAX`).
pub const MAX_INT: i64 = 2_147_483_647;

/// One field of a request body as JSON gave it, without the JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Absent,
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    /// An array or object.
    Other,
}

/// The fields of a flavor create, as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct FlavorFields {
    pub name: Scalar,
    pub id: Scalar,
    pub ram: Scalar,
    pub vcpus: Scalar,
    pub disk: Scalar,
    pub ephemeral: Scalar,
    pub swap: Scalar,
    pub rxtx_factor: Scalar,
    pub is_public: Scalar,
    pub description: Scalar,
}

/// A flavor to create, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFlavor {
    pub name: String,
    /// The client's id, or `None` for one the server picks (a uuid).
    pub flavorid: Option<String>,
    pub memory_mb: i32,
    pub vcpus: i32,
    pub root_gb: i32,
    pub ephemeral_gb: i32,
    pub swap: i32,
    pub rxtx_factor: f64,
    pub is_public: bool,
    pub description: Option<String>,
}

/// A stored flavor with its extra specs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Flavor {
    pub flavorid: String,
    pub name: String,
    pub memory_mb: i32,
    pub vcpus: i32,
    pub root_gb: i32,
    pub ephemeral_gb: i32,
    pub swap: i32,
    pub rxtx_factor: f64,
    pub disabled: bool,
    pub is_public: bool,
    pub description: Option<String>,
    pub extra_specs: std::collections::BTreeMap<String, String>,
}

/// The flavor a server was booted with, as the server keeps it (Nova's embedded flavor, and
/// the flavor's id): stored with the instance as this JSON, read back as this struct.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct FlavorSnapshot {
    pub id: String,
    pub original_name: String,
    pub vcpus: i32,
    pub ram: i32,
    pub disk: i32,
    pub ephemeral: i32,
    pub swap: i32,
    pub extra_specs: std::collections::BTreeMap<String, String>,
}

impl FlavorSnapshot {
    /// The snapshot of `flavor`, taken when a server is booted with it.
    pub fn of(flavor: &Flavor) -> FlavorSnapshot {
        FlavorSnapshot {
            id: flavor.flavorid.clone(),
            original_name: flavor.name.clone(),
            vcpus: flavor.vcpus,
            ram: flavor.memory_mb,
            disk: flavor.root_gb,
            ephemeral: flavor.ephemeral_gb,
            swap: flavor.swap,
            extra_specs: flavor.extra_specs.clone(),
        }
    }
}

/// What an instance keeps of what it was booted with: a Compute API server its flavor's
/// snapshot, an admin-API instance its resource class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootedFlavor {
    Snapshot(FlavorSnapshot),
    ResourceClass(String),
}

impl BootedFlavor {
    /// Reads the stored text: a snapshot's JSON, else a resource class.
    pub fn from_stored(text: String) -> BootedFlavor {
        match serde_json::from_str(&text) {
            Ok(snapshot) if text.starts_with('{') => BootedFlavor::Snapshot(snapshot),
            _ => BootedFlavor::ResourceClass(text),
        }
    }

    /// The snapshot, for a Compute API server.
    pub fn snapshot(&self) -> Option<&FlavorSnapshot> {
        match self {
            BootedFlavor::Snapshot(snapshot) => Some(snapshot),
            BootedFlavor::ResourceClass(_) => None,
        }
    }
}

#[cfg(test)]
mod snapshot_tests {
    use super::*;

    #[test]
    fn a_stored_snapshot_reads_back_and_a_resource_class_stays_one() {
        let stored = r#"{"id":"f1","original_name":"bm","vcpus":2,"ram":512,"disk":10,"ephemeral":1,"swap":0,"extra_specs":{"resources:CUSTOM_BM":"1"}}"#;
        let BootedFlavor::Snapshot(snapshot) = BootedFlavor::from_stored(stored.to_owned()) else {
            panic!("a snapshot's JSON is a snapshot");
        };
        assert_eq!(
            (snapshot.id.as_str(), snapshot.ram, snapshot.disk),
            ("f1", 512, 10)
        );
        assert_eq!(snapshot.extra_specs["resources:CUSTOM_BM"], "1");
        let round = BootedFlavor::from_stored(serde_json::to_string(&snapshot).unwrap());
        assert_eq!(round, BootedFlavor::Snapshot(snapshot));
        assert_eq!(
            BootedFlavor::from_stored("baremetal".to_owned()),
            BootedFlavor::ResourceClass("baremetal".to_owned())
        );
        // A snapshot missing a field (an older one) still reads, the field at its default.
        let older = BootedFlavor::from_stored(r#"{"original_name":"bm","disk":5}"#.to_owned());
        assert_eq!(older.snapshot().map(|s| (s.disk, s.swap)), Some((5, 0)));
    }
}

/// Which flavors a listing shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlavorFilter {
    /// `Some(true)`: public ones (and, for `project`, those shared with it); `Some(false)`:
    /// private ones; `None`: all.
    pub is_public: Option<bool>,
    /// The caller's project when it is not an admin: it also sees flavors shared with it,
    /// and no disabled ones.
    pub project: Option<String>,
    pub min_memory_mb: Option<i32>,
    pub min_root_gb: Option<i32>,
    pub name: Option<String>,
    /// After this flavorid, in the sort order.
    pub marker: Option<String>,
    pub limit: Option<i64>,
    /// A column of `SORT_KEYS`, and whether descending.
    pub sort_key: String,
    pub descending: bool,
}

/// The keys a flavor listing sorts by (Nova's `VALID_SORT_KEYS`).
pub const SORT_KEYS: [&str; 15] = [
    "created_at",
    "description",
    "disabled",
    "ephemeral_gb",
    "flavorid",
    "id",
    "is_public",
    "memory_mb",
    "name",
    "root_gb",
    "rxtx_factor",
    "swap",
    "updated_at",
    "vcpu_weight",
    "vcpus",
];

fn invalid(field: &str, shown: &str, why: &str) -> String {
    format!("Invalid input for field/attribute {field}. Value: {shown}. {why}")
}

fn shown(value: &Scalar) -> String {
    match value {
        Scalar::Absent | Scalar::Null => "None".to_owned(),
        Scalar::Bool(flag) => if *flag { "True" } else { "False" }.to_owned(),
        Scalar::Int(number) => number.to_string(),
        Scalar::Float(number) => number.to_string(),
        Scalar::Text(text) => text.clone(),
        Scalar::Other => "(an array or object)".to_owned(),
    }
}

/// Checks a name as Nova's `name` type: 1–255 printable characters, not starting or ending
/// with whitespace.
pub fn check_name(field: &str, value: &Scalar) -> Result<String, String> {
    let Scalar::Text(text) = value else {
        return Err(invalid(field, &shown(value), "is not of type 'string'"));
    };
    let length = text.chars().count();
    if length == 0 || length > 255 {
        return Err(invalid(field, text, "must have 1 to 255 characters"));
    }
    if text.chars().any(char::is_control) || text.trim() != text {
        return Err(invalid(
            field,
            text,
            "printable characters. Can not start or end with whitespace.",
        ));
    }
    Ok(text.clone())
}

/// An integer field of Nova's `volume_size` type: a JSON integer or a string of digits, from
/// `min` to `MAX_INT`.
pub fn check_integer(field: &str, value: &Scalar, min: i64) -> Result<i32, String> {
    let number = match value {
        Scalar::Int(number) => *number,
        Scalar::Text(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            text.parse().unwrap_or(i64::MAX)
        }
        Scalar::Text(text) => {
            return Err(invalid(field, text, "does not match '^[0-9]+$'"));
        }
        other => {
            return Err(invalid(
                field,
                &shown(other),
                "is not of type 'integer', 'string'",
            ));
        }
    };
    if number < min {
        return Err(invalid(
            field,
            &number.to_string(),
            &format!("{number} is less than the minimum of {min}"),
        ));
    }
    i32::try_from(number)
        .ok()
        .filter(|n| i64::from(*n) <= MAX_INT)
        .ok_or_else(|| {
            invalid(
                field,
                &number.to_string(),
                &format!("{number} is greater than the maximum of {MAX_INT}"),
            )
        })
}

/// A boolean as Nova's `boolean` type takes it: JSON booleans and the strings of
/// `bool_from_string`.
pub fn check_boolean(field: &str, value: &Scalar) -> Result<bool, String> {
    match value {
        Scalar::Bool(flag) => Ok(*flag),
        Scalar::Text(text) => super::extra_specs::bool_like(text)
            .ok_or_else(|| invalid(field, text, "is not a valid boolean value")),
        other => Err(invalid(field, &shown(other), "is not of type 'boolean'")),
    }
}

/// Checks a flavor id as Nova's schema does: a string of `[a-zA-Z0-9. _-]` not starting or
/// ending with a space, a number (as its text), or none (the server picks one).
fn check_flavor_id(value: &Scalar) -> Result<Option<String>, String> {
    Ok(match value {
        Scalar::Absent | Scalar::Null => None,
        Scalar::Int(number) => Some(number.to_string()),
        Scalar::Float(number) => Some(number.to_string()),
        Scalar::Text(text) => {
            let fits = !text.is_empty()
                && text.len() <= 255
                && !text.starts_with(' ')
                && !text.ends_with(' ')
                && text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b". _-".contains(&b));
            if !fits {
                return Err(invalid(
                    "id",
                    text,
                    "does not match '^(?! )[a-zA-Z0-9. _-]+(?<! )$'",
                ));
            }
            Some(text.clone())
        }
        other => {
            return Err(invalid(
                "id",
                &shown(other),
                "is not of type 'string', 'number', 'null'",
            ));
        }
    })
}

impl FlavorFields {
    /// Checks every field as Nova does (`description` from 2.55 only: `with_description`).
    pub fn check(&self, with_description: bool) -> Result<NewFlavor, String> {
        let name = check_name("name", &self.name)?;
        let flavorid = check_flavor_id(&self.id)?;
        let optional = |field: &str, value: &Scalar| match value {
            Scalar::Absent => Ok(0),
            other => check_integer(field, other, 0),
        };
        let rxtx_factor = match &self.rxtx_factor {
            Scalar::Absent => 1.0,
            Scalar::Int(number) if *number > 0 => *number as f64,
            Scalar::Float(number) if *number > 0.0 && *number <= 3.40282e38 => *number,
            Scalar::Text(text)
                if text
                    .parse::<f64>()
                    .is_ok_and(|f| f > 0.0 && f <= 3.40282e38) =>
            {
                text.parse().unwrap_or(1.0)
            }
            other => {
                return Err(invalid(
                    "rxtx_factor",
                    &shown(other),
                    "must be a number above 0",
                ));
            }
        };
        let is_public = match &self.is_public {
            Scalar::Absent => true,
            other => check_boolean("os-flavor-access:is_public", other)?,
        };
        let description = match (&self.description, with_description) {
            (Scalar::Absent | Scalar::Null, _) => None,
            (_, false) => {
                return Err(
                    "Invalid input for field/attribute flavor. Additional properties are not \
                     allowed ('description' was unexpected)"
                        .to_owned(),
                );
            }
            (Scalar::Text(text), true) if text.chars().count() <= 65535 => Some(text.clone()),
            (other, true) => {
                return Err(invalid(
                    "description",
                    &shown(other),
                    "must be a string of at most 65535 characters",
                ));
            }
        };
        Ok(NewFlavor {
            name,
            flavorid,
            memory_mb: check_integer("ram", &self.ram, 1)?,
            vcpus: check_integer("vcpus", &self.vcpus, 1)?,
            root_gb: check_integer("disk", &self.disk, 0)?,
            ephemeral_gb: optional("OS-FLV-EXT-DATA:ephemeral", &self.ephemeral)?,
            swap: optional("swap", &self.swap)?,
            rxtx_factor,
            is_public,
            description,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> FlavorFields {
        FlavorFields {
            name: Scalar::Text("bm.small".to_owned()),
            id: Scalar::Null,
            ram: Scalar::Int(1024),
            vcpus: Scalar::Int(1),
            disk: Scalar::Text("10".to_owned()),
            ephemeral: Scalar::Absent,
            swap: Scalar::Absent,
            rxtx_factor: Scalar::Absent,
            is_public: Scalar::Absent,
            description: Scalar::Absent,
        }
    }

    #[test]
    fn a_well_formed_flavor_is_taken_with_nova_s_defaults() {
        let flavor = fields().check(true).expect("valid");
        assert_eq!(flavor.flavorid, None);
        assert_eq!(
            (flavor.memory_mb, flavor.vcpus, flavor.root_gb),
            (1024, 1, 10)
        );
        assert_eq!((flavor.ephemeral_gb, flavor.swap), (0, 0));
        assert!(flavor.is_public);
        assert_eq!(flavor.rxtx_factor, 1.0);
    }

    #[test]
    fn each_bad_field_is_named() {
        type Spoil = fn(&mut FlavorFields);
        let cases: Vec<(Spoil, &str)> = vec![
            (|f| f.ram = Scalar::Int(0), "ram"),
            (|f| f.vcpus = Scalar::Text("-1".to_owned()), "vcpus"),
            (|f| f.disk = Scalar::Int(-1), "disk"),
            (|f| f.disk = Scalar::Int(MAX_INT + 1), "disk"),
            (|f| f.ram = Scalar::Absent, "ram"),
            (|f| f.name = Scalar::Text(" padded".to_owned()), "name"),
            (|f| f.name = Scalar::Text(String::new()), "name"),
            (|f| f.name = Scalar::Int(3), "name"),
            (|f| f.id = Scalar::Text("a/b".to_owned()), "id"),
            (
                |f| f.is_public = Scalar::Text("perhaps".to_owned()),
                "is_public",
            ),
            (|f| f.swap = Scalar::Float(1.5), "swap"),
            (|f| f.rxtx_factor = Scalar::Int(0), "rxtx_factor"),
        ];
        for (spoil, field) in cases {
            let mut sent = fields();
            spoil(&mut sent);
            let refused = sent.check(true).expect_err(field);
            assert!(refused.contains(field), "{refused} names {field}");
        }
    }

    #[test]
    fn a_description_needs_2_55() {
        let mut sent = fields();
        sent.description = Scalar::Text("small".to_owned());
        assert!(sent.check(false).is_err());
        assert_eq!(
            sent.check(true).expect("2.55").description.as_deref(),
            Some("small")
        );
    }
}
