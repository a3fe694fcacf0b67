//! A real Ironic's node listing as ringmaster keeps it: the nodes as listed,
//! what the listing holder remembers of the last listing (`SeenNodes`: one fingerprint per
//! node, so a listing's cost is its changes, not the mirror's size), what a listing changes
//! (only nodes whose fields changed are written, so an idle Ironic costs no write at all), and
//! when a listing may not be applied (an empty answer never empties the mirror, and a listing
//! that suddenly lacks many nodes is believed only when the next agrees: Nova lost compute
//! nodes both ways).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use uuid::Uuid;

/// A node as a real Ironic lists it, in the mirror's terms.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListedNode {
    pub uuid: Uuid,
    pub name: Option<String>,
    pub resource_class: String,
    pub provision_state: String,
    pub power_state: Option<String>,
    pub maintenance: bool,
    pub last_error: Option<String>,
    pub instance_uuid: Option<Uuid>,
    pub reservation: Option<String>,
    /// Sorted, without duplicates: two listings of the same node compare equal.
    pub traits: Vec<String>,
    pub cpus: i32,
    pub memory_mb: i32,
    pub local_gb: i32,
    /// Nova's addresses (JSON text) from the node's network_data, if it gives any.
    pub addresses: Option<String>,
    /// The node's conductor group: `""` is Ironic's default group.
    pub conductor_group: String,
    /// The node's shard (API 1.82), if it has one.
    pub shard: Option<String>,
}

impl ListedNode {
    /// A digest of every field the mirror keeps: two listings of a node that changed in none
    /// of them have the same fingerprint.
    pub fn fingerprint(&self) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        self.hash(&mut hasher);
        hasher.finish()
    }
}

/// What applying a listing writes: the nodes new or changed, and the nodes gone.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MirrorChanges {
    pub upserts: Vec<ListedNode>,
    pub removals: Vec<Uuid>,
}

impl MirrorChanges {
    /// Says whether the listing changes nothing.
    pub fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.removals.is_empty()
    }

    /// The nodes it writes or removes.
    pub fn nodes(&self) -> Vec<Uuid> {
        let upserted = self.upserts.iter().map(|node| node.uuid);
        upserted.chain(self.removals.iter().copied()).collect()
    }
}

/// Why a listing is not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListingRefused {
    #[error(
        "Ironic listed no nodes while ringmaster knows {known}: nothing is taken for gone \
         until a listing shows nodes again"
    )]
    Empty { known: usize },
}

/// What the listing holder remembers of the mirror: each node's fingerprint. Built once from
/// the mirror when a process starts listing, then kept up to date by the listings it applies
/// and by the rows others write (deploys, tear-downs); about 40 bytes a node.
#[derive(Debug, Default, Clone)]
pub struct SeenNodes {
    seen: HashMap<Uuid, u64>,
}

impl SeenNodes {
    /// Remembers `nodes` as the mirror shows them.
    pub fn note<'a>(&mut self, nodes: impl IntoIterator<Item = &'a ListedNode>) {
        for node in nodes {
            self.seen.insert(node.uuid, node.fingerprint());
        }
    }

    /// Forgets `uuids` (removed from the mirror).
    pub fn forget(&mut self, uuids: &[Uuid]) {
        for uuid in uuids {
            self.seen.remove(uuid);
        }
    }

    /// Nodes remembered.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Says whether no node is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Bytes this memory holds (its table's capacity), for the benchmark's figure.
    pub fn held_bytes(&self) -> usize {
        self.seen.capacity() * (std::mem::size_of::<(Uuid, u64)>() + 1)
    }
}

/// One listing being compared with what was seen, page by page: only the changed nodes are
/// kept, so a listing holds one page and its changes, never the whole listing.
#[derive(Debug, Default)]
pub struct ListingCompare {
    listed: HashSet<Uuid>,
    upserts: Vec<ListedNode>,
}

impl ListingCompare {
    /// Compares one page with `seen`: keeps the nodes new or changed.
    pub fn page(&mut self, seen: &SeenNodes, nodes: impl IntoIterator<Item = ListedNode>) {
        for node in nodes {
            // A node listed twice (pages shifted under a concurrent enrollment) counts once.
            if !self.listed.insert(node.uuid) {
                continue;
            }
            if seen.seen.get(&node.uuid) != Some(&node.fingerprint()) {
                self.upserts.push(node);
            }
        }
    }

    /// Nodes listed so far.
    pub fn listed(&self) -> usize {
        self.listed.len()
    }

    /// The listing's changes: the nodes new or changed, and those `seen` has that it did not
    /// list. An empty listing while nodes are known is refused.
    pub fn finish(self, seen: &SeenNodes) -> Result<MirrorChanges, ListingRefused> {
        if self.listed.is_empty() && !seen.is_empty() {
            return Err(ListingRefused::Empty { known: seen.len() });
        }
        let mut removals: Vec<Uuid> = seen
            .seen
            .keys()
            .filter(|uuid| !self.listed.contains(uuid))
            .copied()
            .collect();
        removals.sort_unstable();
        Ok(MirrorChanges {
            upserts: self.upserts,
            removals,
        })
    }
}

/// Compares `listed` with the mirror's `current` rows: the nodes to write (new, or any field
/// changed) and those to remove (not listed any more). An empty listing while the mirror has
/// nodes is refused.
pub fn compare(
    current: &[ListedNode],
    listed: Vec<ListedNode>,
) -> Result<MirrorChanges, ListingRefused> {
    let mut seen = SeenNodes::default();
    seen.note(current);
    let mut listing = ListingCompare::default();
    listing.page(&seen, listed);
    listing.finish(&seen)
}

/// The most nodes one listing may take for gone at once (`--ironic-vanish-limit`): the
/// smallest of a share of the nodes known (rounded up) and a number of nodes. Beyond, the
/// listing may be partial (a project-scoped token sees only its project's nodes, with a 200; a
/// restored database; a lost page) and the removals wait for the next listing to agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VanishLimit {
    /// Percent of the nodes known, if limited so.
    pub percent: Option<u32>,
    /// Nodes, if limited so.
    pub nodes: Option<usize>,
}

impl Default for VanishLimit {
    /// 10 % of the nodes known, at most 50.
    fn default() -> VanishLimit {
        VanishLimit {
            percent: Some(10),
            nodes: Some(50),
        }
    }
}

impl std::fmt::Display for VanishLimit {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .percent
            .map(|percent| format!("{percent}%"))
            .into_iter()
            .chain(self.nodes.map(|nodes| nodes.to_string()))
            .collect();
        formatter.write_str(&parts.join(","))
    }
}

impl std::str::FromStr for VanishLimit {
    type Err = String;

    /// `10%`, `50` or both, comma-separated (`10%,50`: whichever is smaller).
    fn from_str(text: &str) -> Result<VanishLimit, String> {
        let mut limit = VanishLimit {
            percent: None,
            nodes: None,
        };
        for part in text.split(',').map(str::trim) {
            if let Some(percent) = part.strip_suffix('%') {
                let percent: u32 = percent
                    .trim()
                    .parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| format!("{part:?} is not a percentage from 0% to 100%"))?;
                if limit.percent.replace(percent).is_some() {
                    return Err(format!("{text:?} gives a percentage twice"));
                }
            } else {
                let nodes: usize = part.parse().map_err(|_| {
                    format!("{part:?} is neither a number of nodes nor a percentage")
                })?;
                if limit.nodes.replace(nodes).is_some() {
                    return Err(format!("{text:?} gives a number of nodes twice"));
                }
            }
        }
        Ok(limit)
    }
}

impl VanishLimit {
    /// The most nodes a listing may take for gone at once when `known` are known.
    pub fn of(&self, known: usize) -> usize {
        let share = self
            .percent
            .map(|percent| (known.saturating_mul(percent as usize)).div_ceil(100));
        match (share, self.nodes) {
            (Some(share), Some(nodes)) => share.min(nodes),
            (Some(share), None) => share,
            (None, Some(nodes)) => nodes,
            (None, None) => usize::MAX,
        }
    }
}

/// Holds back removals beyond `limit` until the next listing lacks the same nodes: takes
/// them out of `changes` and returns them (sorted) to be compared with the next listing;
/// returns nothing when within the limit or when `held_before` (the previous listing's) agrees.
pub fn hold_mass_removals(
    limit: usize,
    changes: &mut MirrorChanges,
    held_before: &[Uuid],
) -> Vec<Uuid> {
    if changes.removals.len() <= limit {
        return Vec::new();
    }
    let mut vanished = changes.removals.clone();
    vanished.sort_unstable();
    if vanished == held_before {
        return Vec::new();
    }
    changes.removals.clear();
    vanished
}

/// Normalizes a node's traits: sorted, without duplicates.
pub fn normalize_traits(mut traits: Vec<String>) -> Vec<String> {
    traits.sort_unstable();
    traits.dedup();
    traits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_that_loses_many_nodes_is_believed_only_when_the_next_agrees() {
        let limit = VanishLimit::default();
        assert_eq!(limit.of(5), 1);
        assert_eq!(limit.of(100), 10);
        assert_eq!(limit.of(100_000), 50);
        let gone: Vec<Uuid> = (1..=20).map(Uuid::from_u128).collect();
        let mut changes = MirrorChanges {
            upserts: Vec::new(),
            removals: gone.clone(),
        };
        let held = hold_mass_removals(limit.of(100), &mut changes, &[]);
        assert_eq!(held, gone, "20 of 100 is beyond 10: held");
        assert!(changes.removals.is_empty(), "nothing removed yet");
        let mut again = MirrorChanges {
            upserts: Vec::new(),
            removals: gone.iter().rev().copied().collect(),
        };
        assert!(hold_mass_removals(limit.of(100), &mut again, &held).is_empty());
        assert_eq!(again.removals.len(), 20, "two listings agree: removed");
        let mut few = MirrorChanges {
            upserts: Vec::new(),
            removals: gone[..5].to_vec(),
        };
        assert!(hold_mass_removals(limit.of(100), &mut few, &[]).is_empty());
        assert_eq!(few.removals.len(), 5, "within the limit: removed at once");
    }

    fn node(n: u128, state: &str) -> ListedNode {
        ListedNode {
            uuid: Uuid::from_u128(n),
            name: None,
            resource_class: "baremetal".to_owned(),
            provision_state: state.to_owned(),
            power_state: None,
            maintenance: false,
            last_error: None,
            instance_uuid: None,
            reservation: None,
            traits: Vec::new(),
            cpus: 8,
            memory_mb: 16_384,
            local_gb: 100,
            addresses: None,
            conductor_group: String::new(),
            shard: None,
        }
    }

    #[test]
    fn an_unchanged_listing_writes_nothing() {
        let current = vec![node(1, "available"), node(2, "active")];
        let changes = compare(&current, current.clone()).expect("applied");
        assert!(changes.is_empty());
    }

    #[test]
    fn new_changed_and_gone_nodes_are_found() {
        let current = vec![node(1, "available"), node(2, "available")];
        let listed = vec![node(1, "available"), node(3, "available")];
        let mut maintenance = node(1, "available");
        maintenance.maintenance = true;
        let changes = compare(&current, listed).expect("applied");
        assert_eq!(changes.upserts, vec![node(3, "available")]);
        assert_eq!(changes.removals, vec![Uuid::from_u128(2)]);
        let changes =
            compare(&current, vec![maintenance.clone(), node(2, "available")]).expect("applied");
        assert_eq!(changes.upserts, vec![maintenance]);
        assert!(changes.removals.is_empty());
    }

    #[test]
    fn an_empty_listing_never_empties_the_mirror() {
        assert_eq!(
            compare(&[node(1, "available")], Vec::new()),
            Err(ListingRefused::Empty { known: 1 })
        );
        assert!(compare(&[], Vec::new()).expect("nothing known").is_empty());
    }

    #[test]
    fn traits_compare_as_sets() {
        assert_eq!(
            normalize_traits(vec![
                "CUSTOM_B".into(),
                "CUSTOM_A".into(),
                "CUSTOM_B".into()
            ]),
            vec!["CUSTOM_A".to_owned(), "CUSTOM_B".to_owned()]
        );
    }

    #[test]
    fn the_vanish_limit_reads_a_share_a_number_or_both() {
        assert_eq!("10%,50".parse(), Ok(VanishLimit::default()));
        assert_eq!(VanishLimit::default().to_string(), "10%,50");
        let share: VanishLimit = "20%".parse().expect("a share");
        assert_eq!((share.of(1_000), share.of(3)), (200, 1));
        let nodes: VanishLimit = "0".parse().expect("a number");
        assert_eq!(
            nodes.of(1_000),
            0,
            "every removal waits for a second listing"
        );
        for bad in ["", "ten", "101%", "5%,6%", "1,2", "-1"] {
            assert!(bad.parse::<VanishLimit>().is_err(), "{bad:?} is refused");
        }
    }

    #[test]
    fn a_listing_compared_page_by_page_keeps_only_its_changes() {
        let mut seen = SeenNodes::default();
        let current: Vec<ListedNode> = (1..=4).map(|n| node(n, "available")).collect();
        seen.note(&current);
        let mut listing = ListingCompare::default();
        listing.page(&seen, vec![node(1, "available"), node(2, "active")]);
        listing.page(
            &seen,
            vec![node(2, "active"), node(3, "available"), node(9, "enroll")],
        );
        assert_eq!(listing.listed(), 4, "a node on two pages counts once");
        let changes = listing.finish(&seen).expect("applied");
        assert_eq!(changes.upserts, vec![node(2, "active"), node(9, "enroll")]);
        assert_eq!(changes.removals, vec![Uuid::from_u128(4)]);
        seen.note(&changes.upserts);
        seen.forget(&changes.removals);
        assert_eq!(seen.len(), 4);
        assert!(seen.held_bytes() >= 4 * 24);
        let empty = ListingCompare::default();
        assert_eq!(empty.finish(&seen), Err(ListingRefused::Empty { known: 4 }));
    }
}
