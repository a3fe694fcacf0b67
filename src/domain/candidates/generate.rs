//! Which candidates are made, in which order, and how many (Placement's
//! `allocation_candidates_generation_strategy` and `max_allocation_candidates`, applied while
//! generating, not after): the anchor trees are visited depth-first (every candidate of one
//! tree before the next) or breadth-first (one candidate of each tree in turn), and generation
//! stops at the request's `limit` or at the cap. With sampling (Placement's
//! `randomize_allocation_candidates`) the capped set is made and `limit` of it drawn at random.

use std::collections::{BTreeMap, HashSet, VecDeque};

use super::search::{Search, Slot, Stopped};
use super::{Candidate, Context, GroupOptions, Outcome, Partial, Request};

/// The order in which anchor trees give their candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Every candidate of the first tree, then the next tree's (Placement's default).
    #[default]
    DepthFirst,
    /// One candidate of each tree in turn: a capped answer spreads over every tree.
    BreadthFirst,
}

named_choices!(Strategy, "strategy", {
    DepthFirst => "depth-first",
    BreadthFirst => "breadth-first",
});

/// How candidates are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Generation {
    /// The most candidates made for one request (`None`: no cap).
    pub cap: Option<usize>,
    pub strategy: Strategy,
    /// Draw the answer at random from the capped set, with this seed.
    pub sample_seed: Option<u64>,
}

/// What makes two candidates the same, as Placement's AllocationRequest equality: the anchor
/// does not count.
type CandidateKey = (
    BTreeMap<(usize, String), i64>,
    BTreeMap<String, std::collections::BTreeSet<usize>>,
);

/// Makes the candidates of `options` (one entry per group of `request`).
pub(super) fn run(
    context: &Context,
    request: &Request,
    options: &[GroupOptions],
    generation: &Generation,
    stop: &dyn Fn() -> bool,
) -> Result<Outcome, Stopped> {
    let target = match (generation.sample_seed, request.limit, generation.cap) {
        (Some(_), _, cap) => cap,
        (None, Some(limit), Some(cap)) => Some(limit.min(cap)),
        (None, limit, cap) => limit.or(cap),
    };
    let mut searches: VecDeque<Search> = by_anchor(request, options)
        .into_iter()
        .map(|(anchor, slots)| Search::new(context, request, anchor, slots))
        .collect();
    let mut made: Vec<Candidate> = Vec::new();
    let mut seen: HashSet<CandidateKey> = HashSet::new();
    let mut steps = 0u32;
    while target.is_none_or(|target| made.len() < target) {
        let Some(mut search) = searches.pop_front() else {
            break;
        };
        match search.next(&mut steps, stop)? {
            Some(candidate) => {
                if seen.insert((candidate.amounts.clone(), candidate.mappings.clone())) {
                    made.push(candidate);
                }
                match generation.strategy {
                    Strategy::DepthFirst => searches.push_front(search),
                    Strategy::BreadthFirst => searches.push_back(search),
                }
            }
            None => drop(search),
        }
    }
    let truncated = generation.cap.is_some_and(|cap| {
        made.len() >= cap
            && (generation.sample_seed.is_some() || request.limit.is_none_or(|limit| limit > cap))
    });
    if let Some(seed) = generation.sample_seed {
        sample(&mut made, request.limit, seed);
    }
    let summaries = summaries(context, request, &made);
    Ok(Outcome {
        candidates: made,
        summaries,
        truncated,
    })
}

/// One group's options at one anchor.
enum AtAnchor<'a> {
    Whole(Vec<&'a Partial>),
    /// Per class of the spread group: the providers that can give it.
    Spread(BTreeMap<&'a str, Vec<usize>>),
}

/// The slots of every anchor tree where each group has options, in anchor order.
fn by_anchor<'a>(
    request: &'a Request,
    options: &'a [GroupOptions],
) -> BTreeMap<usize, Vec<Slot<'a>>> {
    let mut anchors: BTreeMap<usize, Vec<Option<AtAnchor<'a>>>> = BTreeMap::new();
    let empty = || (0..options.len()).map(|_| None).collect::<Vec<_>>();
    for (position, found) in options.iter().enumerate() {
        match found {
            GroupOptions::Whole(partials) => {
                for partial in partials {
                    let groups = anchors
                        .entry(partial.candidate.anchor)
                        .or_insert_with(empty);
                    match &mut groups[position] {
                        Some(AtAnchor::Whole(list)) => list.push(partial),
                        slot => *slot = Some(AtAnchor::Whole(vec![partial])),
                    }
                }
            }
            GroupOptions::Spread(nominees) => {
                for (provider, anchor, class) in nominees {
                    let groups = anchors.entry(*anchor).or_insert_with(empty);
                    if !matches!(groups[position], Some(AtAnchor::Spread(_))) {
                        groups[position] = Some(AtAnchor::Spread(BTreeMap::new()));
                    }
                    if let Some(AtAnchor::Spread(classes)) = &mut groups[position] {
                        classes.entry(class.as_str()).or_default().push(*provider);
                    }
                }
            }
        }
    }
    anchors
        .into_iter()
        .filter_map(|(anchor, groups)| Some((anchor, slots(request, groups)?)))
        .collect()
}

/// The search slots of one anchor: `None` when a group has nothing there (or a spread group
/// lacks one of its classes).
fn slots<'a>(request: &'a Request, groups: Vec<Option<AtAnchor<'a>>>) -> Option<Vec<Slot<'a>>> {
    let mut slots = Vec::new();
    for (group, at) in groups.into_iter().enumerate() {
        match at? {
            AtAnchor::Whole(options) => slots.push(Slot::Whole { group, options }),
            AtAnchor::Spread(classes) => {
                let wanted = &request.groups[group].resources;
                if classes.len() != wanted.len() {
                    return None;
                }
                let count = classes.len();
                for (index, (class, options)) in classes.into_iter().enumerate() {
                    let amount = wanted
                        .iter()
                        .find(|(name, _)| name == class)
                        .map_or(0, |(_, amount)| *amount);
                    slots.push(Slot::Class {
                        group,
                        class,
                        amount,
                        options,
                        last: index + 1 == count,
                    });
                }
            }
        }
    }
    Some(slots)
}

/// Keeps `limit` of `made` drawn at random (all of them shuffled without a limit): a partial
/// Fisher–Yates shuffle driven by splitmix64 from `seed`.
fn sample(made: &mut Vec<Candidate>, limit: Option<usize>, seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let keep = limit.unwrap_or(made.len()).min(made.len());
    for index in 0..keep {
        let remaining = (made.len() - index) as u64;
        let pick = index + usize::try_from(next() % remaining).unwrap_or(0);
        made.swap(index, pick);
    }
    made.truncate(keep);
}

/// The providers to summarize: every provider of the trees the candidates take from; before
/// 1.29 on nested trees, only the providers they take from.
fn summaries(context: &Context, request: &Request, made: &[Candidate]) -> Vec<usize> {
    let providers = context.providers;
    if !request.nested_aware && context.has_trees {
        let used: std::collections::BTreeSet<usize> = made
            .iter()
            .flat_map(|candidate| candidate.amounts.keys().map(|(p, _)| *p))
            .collect();
        return used.into_iter().collect();
    }
    let mut roots = vec![false; providers.len()];
    for candidate in made {
        for (provider, _) in candidate.amounts.keys() {
            roots[providers[*provider].root] = true;
        }
    }
    (0..providers.len())
        .filter(|p| roots[providers[*p].root])
        .collect()
}
