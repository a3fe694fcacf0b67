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

/// A root with `children` children of `vcpus` VCPU each (the tree: 10 × 1000).
fn wide_tree(root: u128, children: usize, vcpus: f64) -> Vec<Provider> {
    let mut providers = vec![provider(root, None, 0, facts(&[], &[], &[]))];
    for child in 0..children {
        providers.push(provider(
            root + 1 + child as u128,
            Some(0),
            0,
            facts(&[("VCPU", vcpus, 0)], &[], &[]),
        ));
    }
    providers
}

/// `count` granular groups asking one VCPU each.
fn granular(count: usize, isolate: bool, limit: Option<usize>) -> Request {
    Request {
        groups: (1..=count)
            .map(|n| group(&n.to_string(), &[("VCPU", 1)]))
            .collect(),
        isolate,
        limit,
        nested_aware: true,
        ..Request::default()
    }
}

/// Counts how often the search asks whether to stop (once per 1,024 choices tried).
fn counting(asked: &std::cell::Cell<u32>) -> impl Fn() -> bool + '_ {
    move || {
        asked.set(asked.get() + 1);
        false
    }
}

#[test]
fn six_granular_groups_on_ten_children_make_only_what_is_answered() {
    let providers = wide_tree(1, 10, 1000.0);
    // 10^6 combinations exist; limit=1 makes one, after six choices.
    let asked = std::cell::Cell::new(0);
    let outcome = generate(
        &providers,
        &granular(6, false, Some(1)),
        &Generation::default(),
        &counting(&asked),
    )
    .unwrap();
    assert_eq!(outcome.candidates.len(), 1);
    assert!(!outcome.truncated);
    assert_eq!(asked.get(), 0, "fewer than 1,024 choices tried");
    assert_eq!(outcome.summaries.len(), 11, "the whole tree is summarized");
    // Without a limit, the cap stops it, and says so.
    let capped = Generation {
        cap: Some(1000),
        ..Generation::default()
    };
    let asked = std::cell::Cell::new(0);
    let outcome = generate(
        &providers,
        &granular(6, false, None),
        &capped,
        &counting(&asked),
    )
    .unwrap();
    assert_eq!(outcome.candidates.len(), 1000);
    assert!(outcome.truncated);
    assert!(
        asked.get() <= 2,
        "about one choice per candidate: {}",
        asked.get()
    );
    // Each is a distinct allocation of six VCPUs.
    let distinct: BTreeSet<_> = outcome
        .candidates
        .iter()
        .map(|candidate| candidate.mappings.clone())
        .collect();
    assert_eq!(distinct.len(), 1000);
    assert!(
        outcome
            .candidates
            .iter()
            .all(|candidate| { candidate.amounts.values().sum::<i64>() == 6 })
    );
}

#[test]
fn isolate_and_capacity_prune_as_they_go_and_a_deadline_stops_the_search() {
    // Isolate: 11 groups on 10 children cannot be met; the search sees it before trying any
    // of the 10^11 combinations.
    let providers = wide_tree(1, 10, 1000.0);
    let asked = std::cell::Cell::new(0);
    let outcome = generate(
        &providers,
        &granular(11, true, None),
        &Generation::default(),
        &counting(&asked),
    )
    .unwrap();
    assert!(outcome.candidates.is_empty());
    assert_eq!(asked.get(), 0);
    // 12! answers without a cap: a deadline stops it.
    let twelve = wide_tree(1, 12, 1000.0);
    let stopped = generate(
        &twelve,
        &granular(12, true, None),
        &Generation::default(),
        &|| true,
    );
    assert_eq!(stopped, Err(Stopped));
    // Isolate with as many groups as children: every permutation, each child once.
    let outcome = candidates(&providers[..5], &granular(4, true, None));
    assert_eq!(outcome.candidates.len(), 24);
    // Capacity: 3 groups of one VCPU on 2 children of one VCPU each cannot fit.
    let small = wide_tree(1, 2, 1.0);
    assert!(
        candidates(&small, &granular(3, false, None))
            .candidates
            .is_empty()
    );
    assert_eq!(
        candidates(&small, &granular(2, false, None))
            .candidates
            .len(),
        2
    );
}

#[test]
fn breadth_first_spreads_a_capped_answer_over_every_tree() {
    // Three roots of two children each.
    let mut providers = Vec::new();
    for root in 0..3usize {
        let base = providers.len();
        providers.push(provider(
            100 * root as u128 + 1,
            None,
            base,
            facts(&[], &[], &[]),
        ));
        for child in 0..2u128 {
            providers.push(provider(
                100 * root as u128 + 2 + child,
                Some(base),
                base,
                facts(&[("VCPU", 8.0, 0)], &[], &[]),
            ));
        }
    }
    let roots = |outcome: &Outcome| -> Vec<usize> {
        outcome
            .candidates
            .iter()
            .map(|candidate| candidate.anchor)
            .collect()
    };
    let asked = granular(2, false, None);
    let depth = Generation {
        cap: Some(3),
        ..Generation::default()
    };
    let outcome = generate(&providers, &asked, &depth, &|| false).unwrap();
    assert_eq!(
        roots(&outcome),
        [0, 0, 0],
        "depth-first: the first tree's first"
    );
    let breadth = Generation {
        strategy: Strategy::BreadthFirst,
        ..depth
    };
    let outcome = generate(&providers, &asked, &breadth, &|| false).unwrap();
    assert_eq!(
        roots(&outcome),
        [0, 3, 6],
        "breadth-first: one of each tree"
    );
    assert_eq!(outcome.summaries.len(), 9);
}

#[test]
fn a_sampled_answer_is_drawn_from_the_capped_set() {
    let providers = wide_tree(1, 10, 1000.0);
    let asked = granular(2, false, Some(5));
    let everything: BTreeSet<_> = candidates(&providers, &granular(2, false, None))
        .candidates
        .into_iter()
        .map(|candidate| candidate.mappings)
        .collect();
    let drawn = |seed| -> Vec<_> {
        let generation = Generation {
            cap: Some(50),
            sample_seed: Some(seed),
            ..Generation::default()
        };
        generate(&providers, &asked, &generation, &|| false)
            .unwrap()
            .candidates
            .into_iter()
            .map(|candidate| candidate.mappings)
            .collect()
    };
    let first = drawn(1);
    assert_eq!(first.len(), 5);
    assert!(first.iter().all(|mapping| everything.contains(mapping)));
    assert_eq!(first, drawn(1), "the same seed, the same draw");
    assert_ne!(first, drawn(2), "another seed, another draw");
    let unsampled: Vec<_> = candidates(&providers, &asked)
        .candidates
        .into_iter()
        .map(|candidate| candidate.mappings)
        .collect();
    assert_ne!(first, unsampled, "not simply the first five");
}
