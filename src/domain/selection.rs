//! Which Ironic nodes a process (and each of its hosts) serves: Nova's `[ironic]
//! conductor_group` and `shard`. Unset means every group (or shard); an empty group is Ironic's
//! default group — the two are kept apart. A node belongs to the hosts whose selection matches
//! it; the ring balances each such set of nodes over its own hosts only
//! (`rebalance::plan_tick`), and a set whose hosts are all down is reported, never given to
//! other hosts.

use std::fmt;

/// A conductor group and shard filter; `None` on either: any.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeSelection {
    pub conductor_group: Option<String>,
    pub shard: Option<String>,
}

impl NodeSelection {
    /// Whether a node of `conductor_group` (`""`: the default group) and `shard` is selected.
    pub fn matches(&self, conductor_group: &str, shard: Option<&str>) -> bool {
        self.conductor_group
            .as_deref()
            .is_none_or(|group| group == conductor_group)
            && self
                .shard
                .as_deref()
                .is_none_or(|wanted| shard == Some(wanted))
    }

    /// Whether it selects every node.
    pub fn is_all(&self) -> bool {
        self.conductor_group.is_none() && self.shard.is_none()
    }
}

impl fmt::Display for NodeSelection {
    /// `all nodes`, `conductor group "G"` (`""`: the default group), `shard "S"`, or both.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.conductor_group, &self.shard) {
            (None, None) => formatter.write_str("all nodes"),
            (Some(group), None) => write!(formatter, "conductor group {group:?}"),
            (None, Some(shard)) => write!(formatter, "shard {shard:?}"),
            (Some(group), Some(shard)) => {
                write!(formatter, "conductor group {group:?}, shard {shard:?}")
            }
        }
    }
}

/// The nodes of one conductor group and shard that no live host serves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnservedGroup {
    /// `""`: Ironic's default group.
    pub conductor_group: String,
    pub shard: Option<String>,
    pub nodes: usize,
}

impl fmt::Display for UnservedGroup {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "conductor group {:?}", self.conductor_group)?;
        if let Some(shard) = &self.shard {
            write!(formatter, ", shard {shard:?}")?;
        }
        write!(formatter, " ({} nodes)", self.nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(group: Option<&str>, shard: Option<&str>) -> NodeSelection {
        NodeSelection {
            conductor_group: group.map(str::to_owned),
            shard: shard.map(str::to_owned),
        }
    }

    #[test]
    fn unset_selects_every_group_while_an_empty_group_selects_the_default_group_only() {
        assert!(select(None, None).matches("", None));
        assert!(select(None, None).matches("rack-2", Some("s1")));
        assert!(select(Some(""), None).matches("", Some("s1")));
        assert!(!select(Some(""), None).matches("rack-2", None));
        assert!(select(Some("rack-2"), None).matches("rack-2", None));
        assert!(!select(Some("rack-2"), None).matches("rack-3", None));
    }

    #[test]
    fn a_shard_selects_only_nodes_of_that_shard() {
        assert!(select(None, Some("s1")).matches("any", Some("s1")));
        assert!(!select(None, Some("s1")).matches("any", None));
        assert!(!select(Some("g"), Some("s1")).matches("g", Some("s2")));
        assert!(select(Some("g"), Some("s1")).matches("g", Some("s1")));
    }

    #[test]
    fn selections_and_groups_say_what_they_are() {
        assert_eq!(select(None, None).to_string(), "all nodes");
        assert_eq!(select(Some(""), None).to_string(), "conductor group \"\"");
        assert_eq!(
            select(Some("g"), Some("s")).to_string(),
            "conductor group \"g\", shard \"s\""
        );
        let group = UnservedGroup {
            conductor_group: "rack-2".into(),
            shard: None,
            nodes: 12,
        };
        assert_eq!(group.to_string(), "conductor group \"rack-2\" (12 nodes)");
    }
}
