use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::*;
use crate::domain::placement_filter::{ClassFacts, ProviderFacts};

fn facts(classes: &[(&str, f64, i64)], traits: &[&str], aggregates: &[u128]) -> ProviderFacts {
    ProviderFacts {
        traits: traits.iter().map(|name| (*name).to_owned()).collect(),
        aggregates: aggregates.iter().map(|n| Uuid::from_u128(*n)).collect(),
        classes: classes
            .iter()
            .map(|(class, limit, used)| {
                (
                    (*class).to_owned(),
                    ClassFacts {
                        limit: *limit,
                        used: *used,
                        min_unit: 1,
                        max_unit: 1_000_000,
                        step_size: 1,
                    },
                )
            })
            .collect(),
    }
}

fn provider(n: u128, parent: Option<usize>, root: usize, facts: ProviderFacts) -> Provider {
    Provider {
        uuid: Uuid::from_u128(n),
        parent,
        root,
        facts,
    }
}

fn group(suffix: &str, resources: &[(&str, i64)]) -> Group {
    Group {
        suffix: suffix.to_owned(),
        resources: resources
            .iter()
            .map(|(class, amount)| ((*class).to_owned(), *amount))
            .collect(),
        ..Group::default()
    }
}

fn request(groups: Vec<Group>) -> Request {
    Request {
        groups,
        nested_aware: true,
        ..Request::default()
    }
}

/// Each candidate as {provider: {class: amount}}.
fn shapes(outcome: &Outcome) -> BTreeSet<BTreeMap<usize, BTreeMap<String, i64>>> {
    outcome
        .candidates
        .iter()
        .map(|candidate| {
            let mut shape: BTreeMap<usize, BTreeMap<String, i64>> = BTreeMap::new();
            for ((provider, class), amount) in &candidate.amounts {
                shape
                    .entry(*provider)
                    .or_default()
                    .insert(class.clone(), *amount);
            }
            shape
        })
        .collect()
}

fn shape(entries: &[(usize, &[(&str, i64)])]) -> BTreeMap<usize, BTreeMap<String, i64>> {
    entries
        .iter()
        .map(|(provider, classes)| {
            (
                *provider,
                classes
                    .iter()
                    .map(|(class, amount)| ((*class).to_owned(), *amount))
                    .collect(),
            )
        })
        .collect()
}

/// cn (VCPU) with two NUMA children (MEMORY_MB), plus a flat host with both.
fn numa_tree() -> Vec<Provider> {
    vec![
        provider(
            1,
            None,
            0,
            facts(&[("VCPU", 8.0, 0)], &["HW_CPU_X86_AVX2"], &[]),
        ),
        provider(2, Some(0), 0, facts(&[("MEMORY_MB", 1024.0, 0)], &[], &[])),
        provider(
            3,
            Some(0),
            0,
            facts(&[("MEMORY_MB", 1024.0, 512)], &["CUSTOM_FAST"], &[]),
        ),
        provider(
            4,
            None,
            3,
            facts(&[("VCPU", 8.0, 0), ("MEMORY_MB", 4096.0, 0)], &[], &[]),
        ),
    ]
}

#[test]
fn the_unsuffixed_group_spreads_over_a_tree_from_1_29_only() {
    let providers = numa_tree();
    let asked = request(vec![group("", &[("VCPU", 2), ("MEMORY_MB", 512)])]);
    let outcome = candidates(&providers, &asked);
    assert_eq!(
        shapes(&outcome),
        BTreeSet::from([
            shape(&[(0, &[("VCPU", 2)]), (1, &[("MEMORY_MB", 512)])]),
            shape(&[(0, &[("VCPU", 2)]), (2, &[("MEMORY_MB", 512)])]),
            shape(&[(3, &[("VCPU", 2), ("MEMORY_MB", 512)])]),
        ])
    );
    assert_eq!(
        outcome.summaries,
        vec![0, 1, 2, 3],
        "whole trees are summarized"
    );

    let old = Request {
        nested_aware: false,
        ..asked
    };
    let outcome = candidates(&providers, &old);
    assert_eq!(
        shapes(&outcome),
        BTreeSet::from([shape(&[(3, &[("VCPU", 2), ("MEMORY_MB", 512)])])]),
        "before 1.29 one tree gives one provider"
    );
    assert_eq!(outcome.summaries, vec![3]);
}

#[test]
fn tree_traits_are_met_together_and_capacity_is_checked() {
    let providers = numa_tree();
    let mut fast = group("", &[("VCPU", 2), ("MEMORY_MB", 600)]);
    fast.required = vec![vec!["CUSTOM_FAST".to_owned()]];
    let outcome = candidates(&providers, &request(vec![fast.clone()]));
    assert!(
        outcome.candidates.is_empty(),
        "the fast NUMA node has 512 free"
    );
    fast.resources = vec![("VCPU".to_owned(), 2), ("MEMORY_MB".to_owned(), 100)];
    let outcome = candidates(&providers, &request(vec![fast]));
    assert_eq!(
        shapes(&outcome),
        BTreeSet::from([shape(&[(0, &[("VCPU", 2)]), (2, &[("MEMORY_MB", 100)])])])
    );
}

#[test]
fn a_sharing_provider_lends_to_every_tree_of_its_aggregate() {
    let providers = vec![
        provider(1, None, 0, facts(&[("VCPU", 8.0, 0)], &[], &[7])),
        provider(2, None, 1, facts(&[("VCPU", 8.0, 0)], &[], &[])),
        provider(
            3,
            None,
            2,
            facts(&[("DISK_GB", 100.0, 0)], &[SHARING_TRAIT], &[7]),
        ),
    ];
    let outcome = candidates(
        &providers,
        &request(vec![group("", &[("VCPU", 1), ("DISK_GB", 10)])]),
    );
    assert_eq!(
        shapes(&outcome),
        BTreeSet::from([shape(&[(0, &[("VCPU", 1)]), (2, &[("DISK_GB", 10)])])]),
        "provider 2 is in no aggregate with the storage"
    );
    let outcome = candidates(&providers, &request(vec![group("", &[("DISK_GB", 10)])]));
    assert_eq!(
        outcome.candidates.len(),
        1,
        "the storage alone, anchored on itself"
    );
}

#[test]
fn granular_groups_take_one_provider_each_and_isolate_keeps_them_apart() {
    let providers = vec![
        provider(1, None, 0, facts(&[], &[], &[])),
        provider(
            2,
            Some(0),
            0,
            facts(&[("SRIOV_NET_VF", 4.0, 0)], &["CUSTOM_PHYSNET1"], &[]),
        ),
        provider(
            3,
            Some(0),
            0,
            facts(&[("SRIOV_NET_VF", 4.0, 0)], &["CUSTOM_PHYSNET1"], &[]),
        ),
    ];
    let mut first = group("1", &[("SRIOV_NET_VF", 1)]);
    first.required = vec![vec!["CUSTOM_PHYSNET1".to_owned()]];
    let second = Group {
        suffix: "2".to_owned(),
        ..first.clone()
    };
    let none = candidates(&providers, &request(vec![first.clone(), second.clone()]));
    assert_eq!(
        none.candidates.len(),
        4,
        "2 × 2, the same VF provider twice included"
    );
    let isolated = candidates(
        &providers,
        &Request {
            isolate: true,
            ..request(vec![first, second])
        },
    );
    assert_eq!(
        shapes(&isolated),
        BTreeSet::from([shape(&[
            (1, &[("SRIOV_NET_VF", 1)]),
            (2, &[("SRIOV_NET_VF", 1)])
        ]),])
    );
    assert_eq!(isolated.candidates.len(), 2, "two mappings, one shape");
}

#[test]
fn same_subtree_and_root_required_narrow_the_trees() {
    let mut providers = numa_tree();
    providers[0].facts.traits.insert("CUSTOM_ROOT".to_owned());
    let asked = Request {
        root_required: vec!["CUSTOM_ROOT".to_owned()],
        ..request(vec![group("", &[("VCPU", 1)])])
    };
    let outcome = candidates(&providers, &asked);
    assert_eq!(
        shapes(&outcome),
        BTreeSet::from([shape(&[(0, &[("VCPU", 1)])])])
    );

    let numa = group("_NUMA", &[("MEMORY_MB", 100)]);
    let cpu = group("_CPU", &[("VCPU", 1)]);
    let asked = Request {
        same_subtrees: vec![vec!["_NUMA".to_owned(), "_CPU".to_owned()]],
        ..request(vec![numa, cpu])
    };
    let outcome = candidates(&providers, &asked);
    assert_eq!(
        shapes(&outcome),
        BTreeSet::from([
            shape(&[(0, &[("VCPU", 1)]), (1, &[("MEMORY_MB", 100)])]),
            shape(&[(0, &[("VCPU", 1)]), (2, &[("MEMORY_MB", 100)])]),
            shape(&[(3, &[("VCPU", 1), ("MEMORY_MB", 100)])]),
        ]),
        "the NUMA nodes are under the compute node, which has the VCPU"
    );
}

#[test]
fn combinations_come_one_at_a_time_in_order() {
    let all: Vec<Vec<usize>> = product(&[2, 3]).collect();
    assert_eq!(
        all,
        vec![
            vec![0, 0],
            vec![0, 1],
            vec![0, 2],
            vec![1, 0],
            vec![1, 1],
            vec![1, 2]
        ]
    );
    assert_eq!(product(&[]).count(), 1, "one empty combination");
    assert_eq!(product(&[4, 0]).count(), 0);
    assert_eq!(product(&[1000, 1000, 1000]).take(3).count(), 3, "lazy");
}
