use chrono::{Duration, TimeZone};

use super::*;
use crate::domain::identity::OwnerEpoch;

pub(super) fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0)
        .single()
        .expect("a valid time")
}

pub(super) fn liveness() -> Liveness {
    Liveness::with_down_time(Duration::seconds(10))
}

pub(super) fn host(name: &str, seen_secs_ago: i64) -> Host {
    Host {
        name: name.to_owned(),
        disabled: false,
        disabled_reason: None,
        forced_down: false,
        last_seen_up: Some(now() - Duration::seconds(seen_secs_ago)),
        report_count: 1,
        serves: Default::default(),
    }
}

fn disabled(mut host: Host, reason: Option<&str>) -> Host {
    host.disabled = true;
    host.disabled_reason = reason.map(str::to_owned);
    host
}

fn node(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn owned(n: u128, owner: Option<&str>, epoch: i64) -> NodeOwnership {
    NodeOwnership {
        node: node(n),
        owner: owner.map(str::to_owned),
        epoch: owner.map(|_| epoch),
        conductor_group: String::new(),
        shard: None,
    }
}

fn settings(max_join_moves: usize) -> TickSettings {
    TickSettings {
        algorithm: RingAlgorithm::default(),
        max_join_moves,
    }
}

fn changed(judged: Judged) -> Quiet {
    match judged {
        Judged::Changed(quiet) => quiet,
        Judged::Unchanged(quiet) => panic!("expected a change, got {quiet:?}"),
    }
}

#[test]
fn judge_sorts_up_hosts_into_eligible_draining_and_holding() {
    let hosts = [
        host("cmp-3", 1),
        host("cmp-1", 1),
        host("down", 60),
        disabled(host("drain", 1), Some(crate::domain::host::DRAINING_REASON)),
        disabled(host("hold", 1), Some("maintenance")),
        disabled(
            host("down-drain", 60),
            Some(crate::domain::host::DRAINING_REASON),
        ),
    ];
    let quiet = changed(judge(
        &hosts,
        7,
        Outage::default(),
        &liveness(),
        now(),
        &RingMemory::default(),
    ));
    assert_eq!(quiet.ownership, 7);
    assert_eq!(quiet.eligible, ["cmp-1", "cmp-3"]);
    assert_eq!(quiet.draining, ["drain"]);
    assert_eq!(quiet.holding, ["hold"]);
}

#[test]
fn an_outage_credits_the_heartbeats_it_held_up() {
    // Seen 30 s ago, up when the outage began 25 s ago; the outage ended 2 s ago.
    let hosts = [host("cmp-1", 30)];
    let outage = Outage {
        began: Some(now() - Duration::seconds(25)),
        ended: Some(now() - Duration::seconds(2)),
    };
    let quiet = changed(judge(
        &hosts,
        0,
        outage,
        &liveness(),
        now(),
        &RingMemory::default(),
    ));
    assert_eq!(
        quiet.eligible,
        ["cmp-1"],
        "not judged for heartbeats it could not send"
    );
    let quiet = changed(judge(
        &hosts,
        0,
        Outage::default(),
        &liveness(),
        now(),
        &RingMemory::default(),
    ));
    assert!(quiet.eligible.is_empty(), "without the outage it is down");
}

#[test]
fn an_unchanged_deployment_after_an_empty_plan_is_quiet_unless_a_host_is_joining() {
    let hosts = [host("cmp-1", 1), host("cmp-2", 1)];
    let quiet = changed(judge(
        &hosts,
        3,
        Outage::default(),
        &liveness(),
        now(),
        &RingMemory::default(),
    ));
    let mut memory = RingMemory {
        members: quiet.eligible.clone(),
        joining: BTreeSet::new(),
        quiet: Some(quiet.clone()),
        unserved: Vec::new(),
    };
    assert_eq!(
        judge(&hosts, 3, Outage::default(), &liveness(), now(), &memory),
        Judged::Unchanged(quiet.clone())
    );
    assert!(
        matches!(
            judge(&hosts, 4, Outage::default(), &liveness(), now(), &memory),
            Judged::Changed(_)
        ),
        "a change of ownership is a change"
    );
    memory.joining.insert("cmp-2".to_owned());
    assert!(
        matches!(
            judge(&hosts, 3, Outage::default(), &liveness(), now(), &memory),
            Judged::Changed(_)
        ),
        "a joining host keeps planning"
    );
    let tick = quiet_tick(quiet.clone(), &RingMemory::default());
    assert!(tick.plan.is_empty() && tick.claims.is_empty() && tick.moves.is_empty());
    assert_eq!(tick.memory.members, ["cmp-1", "cmp-2"]);
    assert_eq!(tick.memory.quiet, Some(quiet));
}

#[test]
fn unowned_nodes_are_claimed_and_every_assignment_is_carried_out() {
    let hosts = [host("cmp-1", 1), host("cmp-2", 1)];
    let quiet = changed(judge(
        &hosts,
        0,
        Outage::default(),
        &liveness(),
        now(),
        &RingMemory::default(),
    ));
    let owners: Vec<NodeOwnership> = (1..=50).map(|n| owned(n, None, 0)).collect();
    let tick = plan_tick(quiet, &owners, &RingMemory::default(), settings(100));
    assert_eq!(tick.plan.len(), 50);
    assert_eq!(
        tick.claims.len(),
        50,
        "every unowned node gets its first owner"
    );
    assert!(tick.moves.is_empty());
    for claim in &tick.claims {
        assert!(["cmp-1", "cmp-2"].contains(&claim.host.as_str()));
    }
    assert_eq!(tick.memory.members, ["cmp-1", "cmp-2"]);
    assert_eq!(
        tick.memory.quiet, None,
        "a tick that planned something is not quiet"
    );
}

#[test]
fn a_down_hosts_nodes_move_with_the_epochs_they_were_read_at() {
    let hosts = [host("cmp-1", 1), host("cmp-2", 60)];
    let quiet = changed(judge(
        &hosts,
        0,
        Outage::default(),
        &liveness(),
        now(),
        &RingMemory::default(),
    ));
    let owners = vec![
        owned(1, Some("cmp-1"), 4),
        owned(2, Some("cmp-2"), 9),
        owned(3, Some("cmp-2"), 11),
    ];
    let memory = RingMemory {
        members: vec!["cmp-1".to_owned(), "cmp-2".to_owned()],
        ..RingMemory::default()
    };
    let tick = plan_tick(quiet, &owners, &memory, settings(100));
    assert!(tick.claims.is_empty());
    let mut moves: Vec<(String, String, i64, String)> = tick
        .moves
        .iter()
        .map(|m| {
            (
                m.node.to_string(),
                m.from.to_string(),
                m.epoch.get(),
                m.to.to_string(),
            )
        })
        .collect();
    moves.sort();
    assert_eq!(
        moves,
        [
            (
                node(2).to_string(),
                "cmp-2".to_owned(),
                9,
                "cmp-1".to_owned()
            ),
            (
                node(3).to_string(),
                "cmp-2".to_owned(),
                11,
                "cmp-1".to_owned()
            ),
        ]
    );
    assert!(tick.moves.iter().all(|m| m.reason == MoveReason::HostDown));
    assert_eq!(tick.memory.members, ["cmp-1"]);
}

#[test]
fn a_new_host_joins_at_most_the_cap_per_tick_until_it_converges() {
    let memory = RingMemory {
        members: vec!["cmp-1".to_owned()],
        ..RingMemory::default()
    };
    let hosts = [host("cmp-1", 1), host("cmp-2", 1)];
    let owners: Vec<NodeOwnership> = (1..=200).map(|n| owned(n, Some("cmp-1"), 1)).collect();
    let quiet = changed(judge(
        &hosts,
        0,
        Outage::default(),
        &liveness(),
        now(),
        &memory,
    ));
    let tick = plan_tick(quiet.clone(), &owners, &memory, settings(10));
    assert_eq!(tick.moves.len(), 10, "capped at max_join_moves");
    assert!(
        tick.moves
            .iter()
            .all(|m| m.to == "cmp-2" && m.reason == MoveReason::Join)
    );
    assert!(
        tick.memory.joining.contains("cmp-2"),
        "still joining: it hit the cap"
    );

    // With a cap above its share, it converges in one tick and stops joining.
    let tick = plan_tick(quiet, &owners, &memory, settings(1_000));
    assert!(tick.moves.len() < 1_000);
    assert!(!tick.moves.is_empty());
    assert!(tick.memory.joining.is_empty(), "converged");
}

#[test]
fn a_host_owning_nothing_while_others_own_nodes_is_joining() {
    let memory = RingMemory {
        members: vec!["cmp-1".to_owned(), "cmp-2".to_owned()],
        ..RingMemory::default()
    };
    let owners: Vec<NodeOwnership> = (1..=40).map(|n| owned(n, Some("cmp-1"), 1)).collect();
    let joining = joining_hosts(&["cmp-1".to_owned(), "cmp-2".to_owned()], &owners, &memory);
    assert_eq!(joining.into_iter().collect::<Vec<_>>(), ["cmp-2"]);
    // A joining host that is no longer eligible stops joining.
    let memory = RingMemory {
        joining: BTreeSet::from(["gone".to_owned()]),
        ..memory
    };
    let joining = joining_hosts(&["cmp-1".to_owned()], &owners, &memory);
    assert!(joining.is_empty());
}

#[test]
fn a_draining_hosts_nodes_leave_and_a_holding_hosts_stay() {
    let hosts = [
        host("cmp-1", 1),
        disabled(host("drain", 1), Some(crate::domain::host::DRAINING_REASON)),
        disabled(host("hold", 1), None),
    ];
    let quiet = changed(judge(
        &hosts,
        0,
        Outage::default(),
        &liveness(),
        now(),
        &RingMemory::default(),
    ));
    let owners = vec![owned(1, Some("drain"), 2), owned(2, Some("hold"), 3)];
    let tick = plan_tick(quiet, &owners, &RingMemory::default(), settings(100));
    assert_eq!(tick.moves.len(), 1);
    assert_eq!(tick.moves[0].from, "drain");
    assert_eq!(tick.moves[0].reason, MoveReason::Drain);
    assert_eq!(tick.moves[0].epoch, OwnerEpoch(2));
}

#[test]
fn an_outage_that_comes_and_goes_keeps_when_it_began() {
    let window = Duration::seconds(10);
    let at = |seconds: i64| now() + Duration::seconds(seconds);
    let outage = Outage::default().failed(at(0), window);
    assert_eq!(
        outage,
        Outage {
            began: Some(at(0)),
            ended: None
        }
    );
    // Failing again, or a late tick, while it goes on: it began when it first began.
    assert_eq!(outage.failed(at(5), window), outage);
    assert_eq!(
        outage.gap(at(-2), at(6), window),
        Outage {
            began: Some(at(-2)),
            ended: None
        }
    );
    // Back, then gone again within the window: the same outage, still from its beginning.
    let back = outage.recovered(at(8));
    assert_eq!(
        back,
        Outage {
            began: Some(at(0)),
            ended: Some(at(8))
        }
    );
    assert_eq!(
        back.failed(at(12), window),
        Outage {
            began: Some(at(0)),
            ended: None
        }
    );
    // A late tick right after it ended widens it; one long after starts anew.
    assert_eq!(
        back.gap(at(9), at(14), window),
        Outage {
            began: Some(at(0)),
            ended: Some(at(14))
        }
    );
    assert_eq!(
        back.gap(at(30), at(34), window),
        Outage {
            began: Some(at(30)),
            ended: Some(at(34))
        }
    );
    assert_eq!(
        back.failed(at(30), window),
        Outage {
            began: Some(at(30)),
            ended: None
        }
    );
    // Recovering when nothing is going on changes nothing.
    assert_eq!(back.recovered(at(40)), back);
}

#[test]
fn a_host_up_when_an_outage_began_is_credited_however_long_it_came_and_went() {
    // The database goes away at 0 (the host's last heartbeat), a tick blocked on it is late
    // at 5, it fails again at 6, and answers at 9: the host is judged by the outage's end.
    let window = Duration::seconds(3);
    let liveness = Liveness::with_down_time(window);
    let at = |seconds: i64| now() + Duration::seconds(seconds);
    let outage = Outage::default()
        .failed(at(0), window)
        .gap(at(0), at(5), window)
        .failed(at(6), window)
        .recovered(at(9));
    assert_eq!(outage.began, Some(at(0)));
    let credited = outage.credited(Some(at(0)), &liveness, at(11));
    assert_eq!(
        credited,
        Some(at(9)),
        "not judged for heartbeats the outage held up"
    );
}

#[test]
fn the_first_tick_that_reaches_the_database_again_credits_the_outage() {
    // The database went away at 0 with the host's last heartbeat; the first tick that reads
    // again, at 8, still has the outage going on: it credits it as ending now.
    let liveness = Liveness::with_down_time(Duration::seconds(3));
    let at = |seconds: i64| now() + Duration::seconds(seconds);
    let going_on = Outage::default().failed(at(0), Duration::seconds(3));
    assert_eq!(
        going_on.credited(Some(at(0)), &liveness, at(8)),
        Some(at(8))
    );
    let host = Host {
        last_seen_up: Some(at(0)),
        ..host("cmp-1", 0)
    };
    let judged = judge(
        &[host],
        0,
        going_on,
        &liveness,
        at(8),
        &RingMemory::default(),
    );
    assert!(matches!(judged, Judged::Changed(quiet) if quiet.eligible == ["cmp-1"]));
    // A host not heard from before the outage began gets no credit.
    assert_eq!(
        going_on.credited(Some(at(-10)), &liveness, at(8)),
        Some(at(-10))
    );
}

#[test]
fn the_judge_credits_an_outage_as_the_rebalancer_does() {
    // Last heartbeat 30 s ago, past the 10 s down time.
    let stale = host("compute-1", 30);
    let plain = HostJudge {
        liveness: liveness(),
        outage: Outage::default(),
    };
    assert_eq!(plain.state(&stale, now()), HostState::Down);
    assert!(!plain.is_up(&stale, now()));
    // The database went away 25 s ago (the host was up then) and is still away: not down.
    let going_on = HostJudge {
        liveness: liveness(),
        outage: Outage::default().failed(now() - Duration::seconds(25), Duration::seconds(10)),
    };
    assert_eq!(going_on.state(&stale, now()), HostState::Up);
    assert!(going_on.is_up(&stale, now()));
    // Back 2 s ago: the host has a down time from then to heartbeat again.
    let ended = HostJudge {
        outage: going_on.outage.recovered(now() - Duration::seconds(2)),
        ..going_on
    };
    assert!(ended.is_up(&stale, now()));
    assert!(!ended.is_up(&stale, now() + Duration::seconds(9)));
}
