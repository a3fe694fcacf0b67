//! Merging the groups' partial candidates into candidates (`_merge_candidates`): one per
//! group on the same anchor tree, meeting group_policy and same_subtree, within capacity.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::{Candidate, Context, Partial, Request};

/// Every index combination of lists of the given lengths, the last index varying fastest,
/// lazily.
pub(super) fn product(lengths: &[usize]) -> Product {
    Product {
        lengths: lengths.to_vec(),
        next: (!lengths.contains(&0)).then(|| vec![0; lengths.len()]),
    }
}

/// The combinations of `product`, made one at a time (a wide tree can have millions).
pub(super) struct Product {
    lengths: Vec<usize>,
    next: Option<Vec<usize>>,
}

impl Iterator for Product {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        let current = self.next.take()?;
        let mut following = current.clone();
        let mut position = following.len();
        loop {
            if position == 0 {
                break;
            }
            position -= 1;
            following[position] += 1;
            if following[position] < self.lengths[position] {
                self.next = Some(following);
                break;
            }
            following[position] = 0;
        }
        Some(current)
    }
}

/// What makes two candidates the same, as Placement's AllocationRequest equality: the anchor
/// does not count.
type CandidateKey = (
    BTreeMap<(usize, String), i64>,
    BTreeMap<String, BTreeSet<usize>>,
);

/// `_merge_candidates`: one partial per group, on the same anchor, meeting group_policy and
/// same_subtree, consolidated and within capacity; then the providers of their trees.
pub(super) fn merge(
    context: &Context,
    request: &Request,
    mut by_suffix: Vec<(String, Vec<Partial>)>,
) -> (Vec<Candidate>, Vec<usize>) {
    let merged = if by_suffix.len() == 1 {
        let partials = by_suffix
            .pop()
            .map(|(_, partials)| partials)
            .unwrap_or_default();
        one_group(context, request, partials)
    } else {
        combine_groups(context, request, &by_suffix)
    };
    let summaries = summarized(context, &merged);
    (merged, summaries)
}

/// One group: its candidates already fit, and stand alone.
fn one_group(context: &Context, request: &Request, partials: Vec<Partial>) -> Vec<Candidate> {
    let mut seen: HashSet<CandidateKey> = HashSet::new();
    partials
        .into_iter()
        .map(|part| part.candidate)
        .filter(|candidate| same_subtree(context, request, candidate))
        .filter(|candidate| {
            // Duplicates come only from a sharing provider lending to several trees.
            context.sharing.is_empty()
                || seen.insert((candidate.amounts.clone(), candidate.mappings.clone()))
        })
        .collect()
}

/// Several groups: per anchor tree, every choice of one partial per group that meets
/// group_policy, combined, kept when it meets same_subtree and fits, once.
fn combine_groups(
    context: &Context,
    request: &Request,
    by_suffix: &[(String, Vec<Partial>)],
) -> Vec<Candidate> {
    let mut by_anchor: BTreeMap<usize, Vec<Vec<&Partial>>> = BTreeMap::new();
    for (position, (_, partials)) in by_suffix.iter().enumerate() {
        for partial in partials {
            let lists = by_anchor
                .entry(partial.candidate.anchor)
                .or_insert_with(|| vec![Vec::new(); by_suffix.len()]);
            lists[position].push(partial);
        }
    }
    let granular = by_suffix
        .iter()
        .filter(|(suffix, _)| !suffix.is_empty())
        .count();
    let mut merged: Vec<Candidate> = Vec::new();
    let mut seen: HashSet<CandidateKey> = HashSet::new();
    for (anchor, lists) in by_anchor {
        if lists.iter().any(Vec::is_empty) {
            continue;
        }
        for choice in product(&lists.iter().map(Vec::len).collect::<Vec<_>>()) {
            let parts: Vec<&Partial> = choice
                .iter()
                .enumerate()
                .map(|(i, pick)| lists[i][*pick])
                .collect();
            if request.isolate && !isolated(&parts, granular) {
                continue;
            }
            let combined = combined(anchor, &parts);
            if !same_subtree(context, request, &combined) || exceeds_capacity(context, &combined) {
                continue;
            }
            if seen.insert((combined.amounts.clone(), combined.mappings.clone())) {
                merged.push(combined);
            }
        }
    }
    merged
}

/// group_policy=isolate: the granular groups that want one provider each got distinct ones.
fn isolated(parts: &[&Partial], granular: usize) -> bool {
    let distinct: BTreeSet<usize> = parts
        .iter()
        .filter(|part| part.same_provider)
        .flat_map(|part| part.candidate.mappings.values().flatten().copied())
        .collect();
    distinct.len() == granular
}

/// The partials of one choice as one candidate on `anchor`: amounts summed, mappings joined.
fn combined(anchor: usize, parts: &[&Partial]) -> Candidate {
    let mut combined = Candidate {
        amounts: BTreeMap::new(),
        anchor,
        mappings: BTreeMap::new(),
    };
    for part in parts {
        for (key, amount) in &part.candidate.amounts {
            *combined.amounts.entry(key.clone()).or_insert(0) += amount;
        }
        for (suffix, providers) in &part.candidate.mappings {
            combined
                .mappings
                .entry(suffix.clone())
                .or_default()
                .extend(providers.iter().copied());
        }
    }
    combined
}

/// Every provider of the trees the candidates take from.
fn summarized(context: &Context, merged: &[Candidate]) -> Vec<usize> {
    let mut roots = vec![false; context.providers.len()];
    for candidate in merged {
        for (provider, _) in candidate.amounts.keys() {
            roots[context.providers[*provider].root] = true;
        }
    }
    (0..context.providers.len())
        .filter(|p| roots[context.providers[*p].root])
        .collect()
}

fn exceeds_capacity(context: &Context, candidate: &Candidate) -> bool {
    candidate.amounts.iter().any(|((provider, class), amount)| {
        context.providers[*provider]
            .facts
            .classes
            .get(class)
            .is_none_or(|facts| facts.used + amount > facts.capacity() || *amount > facts.max_unit)
    })
}

/// Every `same_subtree` set: the providers of its groups all under one of them.
fn same_subtree(context: &Context, request: &Request, candidate: &Candidate) -> bool {
    request.same_subtrees.iter().all(|suffixes| {
        let providers: BTreeSet<usize> = suffixes
            .iter()
            .filter_map(|suffix| candidate.mappings.get(suffix))
            .flatten()
            .copied()
            .collect();
        if providers.len() <= 1 {
            return true;
        }
        let ancestors = |mut provider: usize| {
            let mut line = BTreeSet::from([provider]);
            while let Some(parent) = context.providers[provider].parent {
                line.insert(parent);
                provider = parent;
            }
            line
        };
        let mut common: Option<BTreeSet<usize>> = None;
        for provider in &providers {
            let line = ancestors(*provider);
            common = Some(match common {
                None => line,
                Some(set) => set.intersection(&line).copied().collect(),
            });
        }
        common.is_some_and(|set| set.iter().any(|p| providers.contains(p)))
    })
}
