//! A real Ironic's node listing as ringmaster keeps it (issue 16): the nodes as listed, what
//! a listing changes of the mirror it is compared with (only nodes whose state changed are
//! written, so an idle Ironic costs no write at all), and when a listing may not be applied
//! (an empty answer never empties the mirror: Nova lost compute nodes that way).

use std::collections::HashMap;

use uuid::Uuid;

/// A node as a real Ironic lists it, in the mirror's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Compares `listed` with the mirror's `current` rows: the nodes to write (new, or any field
/// changed) and those to remove (not listed any more). An empty listing while the mirror has
/// nodes is refused.
pub fn compare(
    current: &[ListedNode],
    listed: Vec<ListedNode>,
) -> Result<MirrorChanges, ListingRefused> {
    if listed.is_empty() && !current.is_empty() {
        return Err(ListingRefused::Empty {
            known: current.len(),
        });
    }
    let known: HashMap<Uuid, &ListedNode> = current.iter().map(|node| (node.uuid, node)).collect();
    let listed_uuids: std::collections::HashSet<Uuid> =
        listed.iter().map(|node| node.uuid).collect();
    let removals = current
        .iter()
        .map(|node| node.uuid)
        .filter(|uuid| !listed_uuids.contains(uuid))
        .collect();
    let upserts = listed
        .into_iter()
        .filter(|node| known.get(&node.uuid).is_none_or(|was| *was != node))
        .collect();
    Ok(MirrorChanges { upserts, removals })
}

/// The most nodes one listing may take for gone at once: 10 % of those known (rounded up),
/// at most 50, at least 1. Beyond, the listing may be partial (a project-scoped token sees only
/// its project's nodes, with a 200; a restored database; a lost page).
pub fn vanish_limit(known: usize) -> usize {
    known.div_ceil(10).clamp(1, 50)
}

/// Holds back removals beyond `vanish_limit` until the next listing lacks the same nodes:
/// takes them out of `changes` and returns them (sorted) to be compared with the next listing;
/// returns nothing when within the limit or when `held_before` (the previous listing's) agrees.
pub fn hold_mass_removals(
    known: usize,
    changes: &mut MirrorChanges,
    held_before: &[Uuid],
) -> Vec<Uuid> {
    if changes.removals.len() <= vanish_limit(known) {
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
        assert_eq!(vanish_limit(5), 1);
        assert_eq!(vanish_limit(100), 10);
        assert_eq!(vanish_limit(100_000), 50);
        let gone: Vec<Uuid> = (1..=20).map(Uuid::from_u128).collect();
        let mut changes = MirrorChanges {
            upserts: Vec::new(),
            removals: gone.clone(),
        };
        let held = hold_mass_removals(100, &mut changes, &[]);
        assert_eq!(held, gone, "20 of 100 is beyond 10: held");
        assert!(changes.removals.is_empty(), "nothing removed yet");
        let mut again = MirrorChanges {
            upserts: Vec::new(),
            removals: gone.iter().rev().copied().collect(),
        };
        assert!(hold_mass_removals(100, &mut again, &held).is_empty());
        assert_eq!(again.removals.len(), 20, "two listings agree: removed");
        let mut few = MirrorChanges {
            upserts: Vec::new(),
            removals: gone[..5].to_vec(),
        };
        assert!(hold_mass_removals(100, &mut few, &[]).is_empty());
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
}
