//! The identities ringmaster passes around, as types of their own so that one cannot stand
//! for another: an ironic node's uuid (`NodeUuid`), a compute node's row id (`ComputeNodeId`),
//! an instance's uuid (`InstanceUuid`), a Placement consumer's uuid (`ConsumerUuid`), a
//! resource provider's uuid (`ProviderUuid`) and row id (`ProviderId`), a compute host's name (`HostName`) and the epoch a
//! node is owned at (`OwnerEpoch`). The database layer takes and returns these at its boundary
//! and turns them into bare values only where it binds a statement.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

/// An identity that is a uuid: the type, `From<Uuid>`, `uuid()`, parsing, display (lowercase,
/// hyphenated) and serde as the bare uuid.
macro_rules! uuid_identity {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub Uuid);

        impl $name {
            pub fn uuid(self) -> Uuid {
                self.0
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                $name(uuid)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(text).map($name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(formatter)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(serializer)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Uuid::deserialize(deserializer).map($name)
            }
        }
    };
}

uuid_identity!(
    /// An ironic node's uuid: what its compute node carries as `hypervisor_hostname` (as
    /// text, lowercase and hyphenated, the way `Display` writes it).
    NodeUuid
);

uuid_identity!(
    /// An instance's uuid (a server's id in the compute API).
    InstanceUuid
);

uuid_identity!(
    /// A Placement consumer's uuid: what holds allocations (an instance, or any client's
    /// consumer).
    ConsumerUuid
);

uuid_identity!(
    /// A resource provider's uuid (a node's provider has its compute node's uuid).
    ProviderUuid
);

impl From<InstanceUuid> for ConsumerUuid {
    /// An instance is the consumer of its node's allocation.
    fn from(instance: InstanceUuid) -> Self {
        ConsumerUuid(instance.0)
    }
}

/// A resource provider's row id: what Placement's tables (inventories, traits, aggregates,
/// allocations) reference it by; the API names providers by their `ProviderUuid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ProviderId(pub i64);

impl ProviderId {
    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(formatter)
    }
}

/// A compute node's row id: what the fence and every write of a node's owner name it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComputeNodeId(pub i64);

impl ComputeNodeId {
    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for ComputeNodeId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(formatter)
    }
}

impl serde::Serialize for ComputeNodeId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

/// A compute host's name (its service's `host`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HostName(String);

impl HostName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for HostName {
    fn from(name: String) -> Self {
        HostName(name)
    }
}

impl From<&str> for HostName {
    fn from(name: &str) -> Self {
        HostName(name.to_owned())
    }
}

impl From<HostName> for String {
    fn from(name: HostName) -> Self {
        name.0
    }
}

impl Borrow<str> for HostName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for HostName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for HostName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for HostName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for HostName {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl serde::Serialize for HostName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// The epoch a node is owned at: it grows with every move of the node, and every write of its
/// owner is conditional on it (the fence, invariant 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnerEpoch(pub i64);

impl OwnerEpoch {
    pub fn get(self) -> i64 {
        self.0
    }
}

impl PartialEq<i64> for OwnerEpoch {
    fn eq(&self, other: &i64) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for OwnerEpoch {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(formatter)
    }
}

impl serde::Serialize for OwnerEpoch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_uuid_reads_back_as_it_is_written() {
        let node = NodeUuid(Uuid::from_u128(0xABCD));
        let text = node.to_string();
        assert_eq!(text, "00000000-0000-0000-0000-00000000abcd");
        assert_eq!(text.parse::<NodeUuid>().ok(), Some(node));
        assert!("cmp-1".parse::<NodeUuid>().is_err());
    }

    #[test]
    fn a_host_name_compares_with_text() {
        let host = HostName::from("cmp-1");
        assert_eq!(host, "cmp-1");
        assert_eq!(host.as_str(), "cmp-1");
        assert_eq!(host.to_string(), "cmp-1");
    }
}
