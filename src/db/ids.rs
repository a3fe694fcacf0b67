//! The domain's identities as SQL values: each id type binds and reads as the column it is
//! stored in (`bigint` for a compute node's id and a node's epoch, `uuid` for the uuids, `text`
//! for a host name; a node's uuid also as the `text` the compute nodes, instances and boot
//! requests keep it in), so statements take and return the types and the bare value never
//! crosses the database boundary.

use std::io::Write;

use diesel::deserialize::{self, FromSql};
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use uuid::Uuid;

use crate::domain::identity::{
    ComputeNodeId, ConsumerUuid, HostName, InstanceUuid, NodeUuid, OwnerEpoch, ProviderId,
    ProviderUuid,
};

/// `ToSql` and `FromSql` for a newtype over a value diesel already maps.
macro_rules! sql_newtype {
    ($name:ident, $inner:ty, $sql:ty) => {
        impl ToSql<$sql, Pg> for $name {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
                <$inner as ToSql<$sql, Pg>>::to_sql(&self.0, out)
            }
        }

        impl FromSql<$sql, Pg> for $name {
            fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
                <$inner as FromSql<$sql, Pg>>::from_sql(bytes).map($name)
            }
        }
    };
}

sql_newtype!(ComputeNodeId, i64, BigInt);
sql_newtype!(OwnerEpoch, i64, BigInt);
sql_newtype!(ProviderId, i64, BigInt);
sql_newtype!(NodeUuid, Uuid, SqlUuid);
sql_newtype!(InstanceUuid, Uuid, SqlUuid);
sql_newtype!(ConsumerUuid, Uuid, SqlUuid);
sql_newtype!(ProviderUuid, Uuid, SqlUuid);

impl ToSql<Text, Pg> for HostName {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(self.as_str().as_bytes())?;
        Ok(serialize::IsNull::No)
    }
}

impl FromSql<Text, Pg> for HostName {
    fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
        <String as FromSql<Text, Pg>>::from_sql(bytes).map(HostName::from)
    }
}

/// A node's uuid as text (`hypervisor_hostname`, `instances.node`): written hyphenated and
/// lowercase, as `Display` does; a stored text that is no uuid fails the read.
impl ToSql<Text, Pg> for NodeUuid {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        write!(out, "{self}")?;
        Ok(serialize::IsNull::No)
    }
}

impl FromSql<Text, Pg> for NodeUuid {
    fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
        let text = <String as FromSql<Text, Pg>>::from_sql(bytes)?;
        Ok(text.parse()?)
    }
}
