//! `Ironic`: the built-in simulated Ironic over `ironic_nodes` — enroll and delete nodes,
//! the conductor lock (fault injection), deploy and destroy. A `SyncArbiter` actor: its
//! blocking database calls run on its own thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix::prelude::*;

use crate::db::ironic::{self, NewIronicNode, NodeSetting};
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::identity::{InstanceUuid, NodeUuid};

/// The conductor name a lock from the admin API records.
pub const FAULT_CONDUCTOR: &str = "fault-injection";

/// The simulated Ironic.
pub struct Ironic {
    pool: Pool,
    clock: SharedClock,
    /// Fault injection: its node listing fails while set (shared by its threads).
    listing_fails: Arc<AtomicBool>,
}

impl Ironic {
    /// Returns an Ironic over `pool`; `listing_fails` is the listing fault its threads share.
    pub fn new(pool: Pool, clock: SharedClock, listing_fails: Arc<AtomicBool>) -> Ironic {
        Ironic {
            pool,
            clock,
            listing_fails,
        }
    }

    fn run<T>(
        &self,
        work: impl FnOnce(&mut db::Connection) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        db::blocking_transaction(&self.pool, work)
    }
}

impl Actor for Ironic {
    type Context = SyncContext<Self>;
}

/// Enrolls nodes; they wait in `enroll` for their first compute host.
#[derive(Debug, Message)]
#[rtype(result = "Result<usize, DbError>")]
pub struct EnrollNodes {
    pub nodes: Vec<NewIronicNode>,
}

impl Handler<EnrollNodes> for Ironic {
    type Result = Result<usize, DbError>;

    fn handle(&mut self, message: EnrollNodes, _: &mut Self::Context) -> Self::Result {
        let enrolled = self.run(|conn| ironic::enroll_nodes(conn, &message.nodes))?;
        if let Ok(mut conn) = self.pool.get() {
            crate::db::analyze_after_bulk(&mut conn, &["ironic_nodes"], enrolled);
        }
        Ok(enrolled)
    }
}

/// Declares a message to the Ironic actor that runs one write of `db::ironic` in its own
/// transaction, at the actor's clock: `Name { fields } => |message, conn, now| write`.
macro_rules! ironic_write {
    ($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty),* $(,)? }
     => |$message:ident, $conn:ident, $now:ident| $write:expr) => {
        $(#[$doc])*
        #[derive(Debug, Message)]
        #[rtype(result = "Result<(), DbError>")]
        pub struct $name {
            $(pub $field: $ty),*
        }

        impl Handler<$name> for Ironic {
            type Result = Result<(), DbError>;

            fn handle(&mut self, $message: $name, _: &mut Self::Context) -> Self::Result {
                let $now = self.clock.now();
                self.run(|$conn| $write)
            }
        }
    };
}

ironic_write! {
    /// Deletes a node from Ironic (refused while an instance is on it).
    DeleteNode { node: NodeUuid } => |message, conn, _now| ironic::delete_node(conn, message.node.uuid())
}

ironic_write! {
    /// Takes (`locked`) or releases the conductor lock of a node.
    LockNode { node: NodeUuid, locked: bool } => |message, conn, now| {
        let conductor = message.locked.then_some(FAULT_CONDUCTOR);
        ironic::set_node(conn, message.node.uuid(), NodeSetting::Reservation(conductor), now)
    }
}

ironic_write! {
    /// Puts a node in maintenance or takes it out.
    SetMaintenance { node: NodeUuid, on: bool }
        => |message, conn, now| {
            ironic::set_node(conn, message.node.uuid(), NodeSetting::Maintenance(message.on), now)
        }
}

ironic_write! {
    /// Deploys an instance onto a node; fails on a locked node.
    Deploy { node: NodeUuid, instance: InstanceUuid }
        => |message, conn, now| ironic::deploy(conn, message.node.uuid(), message.instance, now)
}

ironic_write! {
    /// Powers the node of an instance on (a reboot ends on) or off; fails on a locked node.
    SetPower { node: NodeUuid, instance: InstanceUuid, on: bool }
        => |message, conn, now| ironic::set_power(conn, message.node.uuid(), message.instance, message.on, now)
}

ironic_write! {
    /// Tears an instance down; fails on a locked node.
    Destroy { node: NodeUuid } => |message, conn, now| ironic::destroy(conn, message.node.uuid(), now)
}

/// Asks whether a node exists and carries an instance.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, DbError>")]
pub struct Carries {
    pub node: NodeUuid,
    pub instance: InstanceUuid,
}

impl Handler<Carries> for Ironic {
    type Result = Result<bool, DbError>;

    fn handle(&mut self, message: Carries, _: &mut Self::Context) -> Self::Result {
        self.run(|conn| ironic::carries(conn, message.node.uuid(), message.instance))
    }
}

/// Fault injection: from now on Ironic's node listing fails (`fail`) or works again.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct FailNodeListing {
    pub fail: bool,
}

impl Handler<FailNodeListing> for Ironic {
    type Result = ();

    fn handle(&mut self, message: FailNodeListing, _: &mut Self::Context) -> Self::Result {
        self.listing_fails.store(message.fail, Ordering::SeqCst);
    }
}

/// Asks whether the node listing works: a tracker pass lists its nodes only then, and a pass
/// whose listing fails writes nothing (no node is taken for gone).
#[derive(Debug, Message)]
#[rtype(result = "Result<(), String>")]
pub struct CheckListing;

impl Handler<CheckListing> for Ironic {
    type Result = Result<(), String>;

    fn handle(&mut self, _: CheckListing, _: &mut Self::Context) -> Self::Result {
        if self.listing_fails.load(Ordering::SeqCst) {
            Err("the node listing failed (fault injection)".to_owned())
        } else {
            Ok(())
        }
    }
}
