//! The messages a script may send: the target names, which messages each actor takes, and
//! their arguments.

use serde::Deserialize;
use serde_json::Value;

use super::{IntOrRef, Message, PurgeArgs, Target, typed};

pub(super) fn parse_target(to: &str) -> Result<Target, String> {
    match to {
        "rebalancer" => Ok(Target::Rebalancer),
        "registry" => Ok(Target::Registry),
        "archiver" => Ok(Target::Archiver),
        "ironic" => Ok(Target::Ironic),
        "scheduler" => Ok(Target::Scheduler),
        other => match other.strip_prefix("host:") {
            Some(host) if !host.is_empty() => Ok(Target::Host(host.to_owned())),
            _ => Err(format!(
                "unknown actor {other:?}: expected rebalancer, registry, archiver, ironic, scheduler or host:NAME"
            )),
        },
    }
}

/// The messages each actor accepts.
fn accepted(to: &Target) -> &'static [&'static str] {
    match to {
        Target::Rebalancer => &["RebalanceNow", "Resign"],
        Target::Registry => &["CreateProvider", "DeleteOrphan"],
        Target::Archiver => &["ArchiveOnce", "Purge", "AuditPeriod"],
        Target::Ironic => &[
            "EnrollNodes",
            "DeleteNode",
            "LockNode",
            "UnlockNode",
            "SetMaintenance",
            "FailNodeListing",
        ],
        Target::Scheduler => &["Boot"],
        Target::Host(_) => &[
            "Heartbeat",
            "UpdateAvailableResource",
            "ReadNodes",
            "Crash",
            "Start",
            "DestroyInstance",
            "IsFenced",
        ],
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeArg {
    node: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MaintenanceArgs {
    node: String,
    on: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PassArgs {
    nodes_from: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListingArgs {
    fail: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderArgs {
    uuid: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OrphanArgs {
    node: String,
    host: String,
    epoch: IntOrRef,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DestroyArgs {
    instance: String,
    #[serde(default)]
    defer_pci_free: bool,
}

/// Parses message `name` to `to` with its `args`, checking that `to` takes it.
pub(super) fn parse_message(
    to: &Target,
    name: &str,
    args: Option<Value>,
) -> Result<Message, String> {
    let names = accepted(to);
    if !names.contains(&name) {
        let actor = match to {
            Target::Host(host) => format!("host:{host}"),
            other => format!("{other:?}").to_lowercase(),
        };
        return Err(format!(
            "unknown message {name:?} for {actor}: expected one of {}",
            names.join(", ")
        ));
    }
    let args = args.unwrap_or(Value::Object(serde_json::Map::new()));
    if let Some(message) = bare_message(name) {
        return match &args {
            Value::Object(map) if map.is_empty() => Ok(message),
            Value::Null => Ok(message),
            _ => Err(format!("{name} takes no arguments")),
        };
    }
    message_with_args(name, args)
}

/// The messages that take no arguments.
fn bare_message(name: &str) -> Option<Message> {
    Some(match name {
        "RebalanceNow" => Message::RebalanceNow,
        "Resign" => Message::Resign,
        "Heartbeat" => Message::Heartbeat,
        "ReadNodes" => Message::ReadNodes,
        "Crash" => Message::Crash,
        "Start" => Message::Start,
        "IsFenced" => Message::IsFenced,
        _ => return None,
    })
}

/// The messages that take arguments, read from `args`.
fn message_with_args(name: &str, args: Value) -> Result<Message, String> {
    let what = format!("arguments of {name}");
    Ok(match name {
        "UpdateAvailableResource" => Message::UpdateAvailableResource {
            nodes_from: if args.is_null() {
                None
            } else {
                typed::<PassArgs>(&what, args)?.nodes_from
            },
        },
        "CreateProvider" => {
            let parsed: ProviderArgs = typed(&what, args)?;
            Message::CreateProvider {
                uuid: parsed.uuid,
                name: parsed.name,
            }
        }
        "DeleteOrphan" => {
            let parsed: OrphanArgs = typed(&what, args)?;
            Message::DeleteOrphan {
                node: parsed.node,
                host: parsed.host,
                epoch: parsed.epoch,
            }
        }
        "ArchiveOnce" => Message::ArchiveOnce(typed(&what, args)?),
        "Purge" => {
            let purge: PurgeArgs = typed(&what, args)?;
            if purge.all == purge.before.is_some() {
                return Err(format!("{what}: give all: true or before, one of them"));
            }
            Message::Purge(purge)
        }
        "AuditPeriod" => Message::AuditPeriod(typed(&what, args)?),
        "EnrollNodes" => Message::EnrollNodes(typed(&what, args)?),
        "DeleteNode" => Message::DeleteNode {
            node: typed::<NodeArg>(&what, args)?.node,
        },
        "LockNode" => Message::LockNode {
            node: typed::<NodeArg>(&what, args)?.node,
        },
        "UnlockNode" => Message::UnlockNode {
            node: typed::<NodeArg>(&what, args)?.node,
        },
        "SetMaintenance" => {
            let parsed: MaintenanceArgs = typed(&what, args)?;
            Message::SetMaintenance {
                node: parsed.node,
                on: parsed.on,
            }
        }
        "FailNodeListing" => Message::FailNodeListing {
            fail: typed::<ListingArgs>(&what, args)?.fail,
        },
        "Boot" => Message::Boot(typed(&what, args)?),
        "DestroyInstance" => {
            let parsed: DestroyArgs = typed(&what, args)?;
            Message::DestroyInstance {
                instance: parsed.instance,
                defer_pci_free: parsed.defer_pci_free,
            }
        }
        other => return Err(format!("unknown message {other:?}")),
    })
}
