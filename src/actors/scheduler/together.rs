//! `BootTogether`: boots that stand or fall together, as a Compute API create with
//! `min_count` needs them. Every node is claimed in one transaction (each claim a savepoint of
//! it, as a single boot's claim is a transaction of its own); when one finds no node, the
//! transaction rolls back and no claim is kept. Only after the commit do the builds start, so
//! no host — here or in another process — builds an instance whose siblings failed.

use actix::prelude::*;

use super::{BootError, ClaimError, Placed, Scheduler, after_claim, claim_node};
use crate::db;
use crate::domain::identity::InstanceUuid;
use crate::domain::instance::Instance;

/// Boots every one of `boots` (each with its uuid), or none of them: `NoValidHost` when the
/// free nodes do not take them all, nothing written.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Vec<Instance>, BootError>")]
pub struct BootTogether {
    pub boots: Vec<super::Boot>,
}

impl Handler<BootTogether> for Scheduler {
    type Result = ResponseFuture<Result<Vec<Instance>, BootError>>;

    fn handle(&mut self, message: BootTogether, _: &mut Self::Context) -> Self::Result {
        let parts = self.parts();
        let (pool, clock, hosts) = (parts.pool, parts.clock, parts.hosts);
        let (settings, judge) = (parts.settings, parts.judge);
        Box::pin(async move {
            let boots: Vec<(super::Boot, InstanceUuid)> = message
                .boots
                .into_iter()
                .map(|boot| {
                    let uuid = boot
                        .uuid
                        .unwrap_or_else(|| InstanceUuid(uuid::Uuid::new_v4()));
                    (boot, uuid)
                })
                .collect();
            let local_hosts = hosts.names();
            let (claims, claim_clock, claim_hosts) =
                (boots.clone(), clock.clone(), local_hosts.clone());
            let placed = db::run(&pool, move |conn| {
                Ok(db::in_transaction(conn, |conn| {
                    let mut placed = Vec::with_capacity(claims.len());
                    for (boot, uuid) in &claims {
                        let node = claim_node(
                            conn,
                            boot,
                            *uuid,
                            &claim_hosts,
                            (judge, &settings),
                            &claim_clock,
                        )?;
                        placed.push(node.ok_or(ClaimError::Short)?);
                    }
                    Ok::<_, ClaimError>(placed)
                }))
            })
            .await?;
            let placed = match placed {
                Ok(placed) => placed,
                Err(ClaimError::Short) => {
                    return Err(match boots.first() {
                        Some((boot, _)) => BootError::no_valid_host(&boot.request),
                        None => ClaimError::Short.into(),
                    });
                }
                Err(other) => return Err(other.into()),
            };
            let mut answers = Vec::with_capacity(placed.len());
            for ((boot, uuid), node) in boots.into_iter().zip(placed) {
                let local = local_hosts.iter().any(|local| node.host == *local);
                let placed = Placed { node, local };
                let answer = after_claim(
                    pool.clone(),
                    clock.clone(),
                    hosts.clone(),
                    settings.instance_build_timeout,
                    boot,
                    uuid,
                    placed,
                );
                answers.push(answer.await?);
            }
            Ok(answers)
        })
    }
}
