//! The keys of the configuration file (`--config`, docs/configuration.md): every flag of `serve`
//! and the global ones, each under one section. A key is the flag's name without the section's
//! name in front where it has it (`--ironic-url` is `url` in `[ironic]`); the whole flag name is
//! taken too, and `_` for `-`. Also the relations between flags (one needs the other, one excludes
//! the other), checked after parsing whatever each value's source.

/// The sections of the file, in the order `config show` prints them.
pub const SECTIONS: &[&str] = &[
    "database",
    "http",
    "hosts",
    "ironic",
    "keystone",
    "placement",
    "archive",
    "log",
];

/// One key: its section, the flag's name (`--` aside) and whether the flag is global (every
/// command takes it) rather than `serve`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigKey {
    pub section: &'static str,
    pub flag: &'static str,
    pub global: bool,
}

impl ConfigKey {
    /// The key's name in its section.
    pub fn name(&self) -> &'static str {
        self.flag
            .strip_prefix(self.section)
            .and_then(|rest| rest.strip_prefix('-'))
            .unwrap_or(self.flag)
    }

    /// clap's id of the flag (the field's name).
    pub fn id(&self) -> String {
        self.flag.replace('-', "_")
    }

    /// Whether `written` (a key as the file spells it) names this key.
    pub fn is_named(&self, written: &str) -> bool {
        let written = written.replace('_', "-");
        written == self.name() || written == self.flag
    }
}

const fn global(section: &'static str, flag: &'static str) -> ConfigKey {
    ConfigKey {
        section,
        flag,
        global: true,
    }
}

const fn serve(section: &'static str, flag: &'static str) -> ConfigKey {
    ConfigKey {
        section,
        flag,
        global: false,
    }
}

/// Every key; a test checks that each flag of `serve` has exactly one.
pub const KEYS: &[ConfigKey] = &[
    global("database", "database-url"),
    global("database", "data-dir"),
    global("database", "pg-bin-dir"),
    global("database", "db-pool-size"),
    serve("database", "database-grace"),
    serve("http", "bind"),
    serve("http", "admin-token"),
    serve("http", "admin-token-file"),
    serve("http", "allowed-hosts"),
    serve("http", "body-timeout"),
    serve("http", "max-event-streams"),
    serve("http", "max-event-streams-per-client"),
    serve("http", "tls-cert"),
    serve("http", "tls-key"),
    serve("http", "trusted-proxies"),
    serve("http", "metrics-token-file"),
    serve("http", "metrics-public"),
    serve("hosts", "hosts"),
    serve("hosts", "nodes"),
    serve("hosts", "resource-class"),
    serve("hosts", "report-interval"),
    serve("hosts", "service-down-time"),
    serve("hosts", "update-resources-interval"),
    serve("hosts", "rebalance-interval"),
    serve("hosts", "ring"),
    serve("hosts", "pci-devices"),
    serve("hosts", "max-join-moves"),
    serve("hosts", "leader-lease"),
    serve("hosts", "instance-build-timeout"),
    serve("hosts", "max-build-attempts"),
    serve("hosts", "build-failure-cooldown"),
    serve("ironic", "ironic-url"),
    serve("ironic", "ironic-user"),
    serve("ironic", "ironic-password-file"),
    serve("ironic", "ironic-conductor-group"),
    serve("ironic", "ironic-shard"),
    serve("ironic", "ironic-image-source"),
    serve("ironic", "ironic-poll-interval"),
    serve("ironic", "ironic-deploy-timeout"),
    serve("ironic", "ironic-lock-retries"),
    serve("ironic", "ironic-cafile"),
    serve("ironic", "ironic-certfile"),
    serve("ironic", "ironic-keyfile"),
    serve("ironic", "ironic-insecure"),
    serve("ironic", "ironic-vanish-limit"),
    serve("ironic", "ironic-valid-interfaces"),
    serve("ironic", "glance-url"),
    serve("ironic", "ironic-glance-project"),
    serve("keystone", "auth-strategy"),
    serve("keystone", "keystone-url"),
    serve("keystone", "keystone-user"),
    serve("keystone", "keystone-password-file"),
    serve("keystone", "keystone-project"),
    serve("keystone", "keystone-user-domain"),
    serve("keystone", "keystone-project-domain"),
    serve("keystone", "keystone-cache-lifetime"),
    serve("keystone", "keystone-cafile"),
    serve("keystone", "keystone-insecure"),
    serve("keystone", "region-name"),
    serve("keystone", "admin-project"),
    serve("placement", "placement-policy"),
    serve("placement", "placement-cors-origins"),
    serve("placement", "placement-cors-headers"),
    serve("placement", "placement-max-allocation-candidates"),
    serve("placement", "placement-candidates-strategy"),
    serve("placement", "placement-randomize-candidates"),
    serve("placement", "placement-candidates-timeout"),
    serve("archive", "archive-interval"),
    global("log", "log-format"),
    global("log", "log-level"),
    global("log", "log-file"),
    global("log", "log-file-size"),
    global("log", "log-file-count"),
];

/// Flags that need another (both ways where both are listed).
pub const REQUIRES: &[(&str, &str)] = &[
    ("ironic-user", "ironic-password-file"),
    ("ironic-password-file", "ironic-user"),
    ("ironic-certfile", "ironic-keyfile"),
    ("ironic-keyfile", "ironic-certfile"),
    ("tls-cert", "tls-key"),
    ("tls-key", "tls-cert"),
];

/// Flags that exclude each other.
pub const CONFLICTS: &[(&str, &str)] = &[
    ("admin-token", "admin-token-file"),
    ("ironic-insecure", "ironic-cafile"),
    ("keystone-insecure", "keystone-cafile"),
    ("metrics-public", "metrics-token-file"),
];

/// The keys of `section`.
pub fn in_section(section: &str) -> impl Iterator<Item = &'static ConfigKey> + '_ {
    KEYS.iter().filter(move |key| key.section == section)
}

/// The key a flag is written under.
pub fn of_flag(flag: &str) -> Option<&'static ConfigKey> {
    KEYS.iter().find(|key| key.flag == flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longs(command: &clap::Command) -> Vec<String> {
        command
            .get_arguments()
            .filter_map(|arg| arg.get_long())
            .filter(|long| !matches!(*long, "help" | "version" | "config"))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_flag_of_serve_and_every_global_flag_has_exactly_one_key() {
        let mut command = crate::cli::command();
        command.build();
        let serve = command.find_subcommand("serve").unwrap();
        for flag in longs(serve) {
            let keys: Vec<_> = KEYS.iter().filter(|key| key.flag == flag).collect();
            assert_eq!(keys.len(), 1, "--{flag} has {} keys", keys.len());
        }
        for flag in longs(&command) {
            assert!(
                of_flag(&flag).is_some_and(|key| key.global),
                "--{flag} is global"
            );
        }
        for key in KEYS {
            assert!(
                crate::cli::config_file::flag_of(&command, key).is_some(),
                "{} names no flag",
                key.flag
            );
            assert!(SECTIONS.contains(&key.section));
        }
        for (one, other) in REQUIRES.iter().chain(CONFLICTS) {
            assert!(of_flag(one).is_some() && of_flag(other).is_some());
        }
    }

    #[test]
    fn a_key_is_the_flag_without_its_section_and_the_whole_flag_works_too() {
        let url = of_flag("ironic-url").unwrap();
        assert_eq!(url.name(), "url");
        assert!(url.is_named("url") && url.is_named("ironic-url") && url.is_named("ironic_url"));
        assert!(!url.is_named("ironic"));
        assert_eq!(of_flag("db-pool-size").unwrap().name(), "db-pool-size");
        assert_eq!(of_flag("log-format").unwrap().name(), "format");
    }
}
