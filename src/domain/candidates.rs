//! Allocation candidates as OpenStack Placement 16.0.0 computes them
//! (`placement/objects/allocation_candidate.py` and `research_context.py`), over a snapshot of
//! every provider: trees of nested providers, sharing providers (`MISC_SHARES_VIA_AGGREGATE`)
//! lending to every tree they share an aggregate with, the unsuffixed request group spread over
//! a tree and its sharing providers, granular groups each on one provider, `group_policy`,
//! `same_subtree`, `root_required` and `in_tree`. Pure.
//!
//! Placement returns its candidates in set order; here they come in a stable order (anchor trees
//! in provider order, depth-first or breadth-first across them, then combinations in order),
//! made one at a time and only as many as are answered: `limit`, or the candidate cap
//! (Placement's `max_allocation_candidates`), whichever comes first (`generate`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use super::placement_filter::ProviderFacts;

/// The trait that makes a provider lend its inventory through its aggregates.
pub const SHARING_TRAIT: &str = "MISC_SHARES_VIA_AGGREGATE";

/// One provider of the snapshot; `parent` and `root` are indexes into the same slice.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    pub uuid: Uuid,
    pub parent: Option<usize>,
    pub root: usize,
    pub facts: ProviderFacts,
}

/// One request group: the unsuffixed one (`suffix` empty: its resources may come from several
/// providers of one tree and its sharing providers) or a granular one (one provider).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    pub suffix: String,
    pub resources: Vec<(String, i64)>,
    pub required: Vec<Vec<String>>,
    pub forbidden: Vec<String>,
    pub member_of: Vec<Vec<Uuid>>,
    pub forbidden_aggregates: Vec<Uuid>,
    pub in_tree: Option<Uuid>,
}

impl Group {
    fn same_provider(&self) -> bool {
        !self.suffix.is_empty()
    }
}

/// A whole request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub groups: Vec<Group>,
    pub limit: Option<usize>,
    pub isolate: bool,
    pub root_required: Vec<String>,
    pub root_forbidden: Vec<String>,
    pub same_subtrees: Vec<Vec<String>>,
    /// From 1.29: resources of one group may come from several providers of a tree.
    pub nested_aware: bool,
}

/// One allocation request: amounts by (provider, class), the root of the tree it is anchored
/// on, and which providers satisfied each group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate {
    pub amounts: BTreeMap<(usize, String), i64>,
    pub anchor: usize,
    pub mappings: BTreeMap<String, BTreeSet<usize>>,
}

/// The answer: the allocation requests, and the providers to summarize.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub candidates: Vec<Candidate>,
    pub summaries: Vec<usize>,
    /// Generation stopped at the candidate cap: more candidates may exist.
    pub truncated: bool,
}

/// Per requested class: the class, the amount, and the (provider, root) pairs with room.
type WithResource = Vec<(String, i64, BTreeSet<(usize, usize)>)>;

/// One group's possible allocation: before merging, with its group's kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Partial {
    candidate: Candidate,
    same_provider: bool,
}

struct Context<'a> {
    providers: &'a [Provider],
    sharing: BTreeSet<usize>,
    has_trees: bool,
    anchor_roots: Option<BTreeSet<usize>>,
    by_uuid: HashMap<Uuid, usize>,
}

impl Context<'_> {
    fn in_filtered_anchors(&self, root: usize) -> bool {
        self.anchor_roots
            .as_ref()
            .is_none_or(|roots| roots.contains(&root))
    }

    fn has_trait(&self, provider: usize, name: &str) -> bool {
        self.providers[provider].facts.traits.contains(name)
    }

    /// Providers in every list of `member_of` (each list: any of its aggregates).
    fn in_aggregates(&self, member_of: &[Vec<Uuid>]) -> BTreeSet<usize> {
        (0..self.providers.len())
            .filter(|index| {
                member_of.iter().all(|any| {
                    any.iter().any(|aggregate| {
                        self.providers[*index].facts.aggregates.contains(aggregate)
                    })
                })
            })
            .collect()
    }

    /// For each sharing provider of `sharing`: the roots of every tree with a provider in one of
    /// its aggregates (its own root included).
    fn anchors_for_sharing(&self, sharing: &BTreeSet<usize>) -> BTreeSet<(usize, usize)> {
        let mut anchors = BTreeSet::new();
        for &lender in sharing {
            let aggregates = &self.providers[lender].facts.aggregates;
            if aggregates.is_empty() {
                continue;
            }
            for (index, provider) in self.providers.iter().enumerate() {
                if provider
                    .facts
                    .aggregates
                    .iter()
                    .any(|aggregate| aggregates.contains(aggregate))
                {
                    anchors.insert((lender, self.providers[index].root));
                }
            }
        }
        anchors
    }
}

/// Computes every allocation candidate of `request` over `providers` (up to its `limit`),
/// depth-first across trees, without a cap or a deadline.
pub fn candidates(providers: &[Provider], request: &Request) -> Outcome {
    generate(providers, request, &Generation::default(), &|| false).unwrap_or_default()
}

/// Computes the allocation candidates of `request` over `providers` as `generation` says:
/// one at a time, stopping at the request's `limit` (unless sampling) or the cap; `Stopped`
/// when `stop` says so (it is asked every thousand or so choices).
pub fn generate(
    providers: &[Provider],
    request: &Request,
    generation: &Generation,
    stop: &dyn Fn() -> bool,
) -> Result<Outcome, Stopped> {
    let sharing: BTreeSet<usize> = (0..providers.len())
        .filter(|index| providers[*index].facts.traits.contains(SHARING_TRAIT))
        .collect();
    let anchor_roots = (!request.root_required.is_empty() || !request.root_forbidden.is_empty())
        .then(|| {
            (0..providers.len())
                .filter(|index| {
                    let provider = &providers[*index];
                    provider.parent.is_none()
                        && request
                            .root_required
                            .iter()
                            .all(|name| provider.facts.traits.contains(name))
                        && !request
                            .root_forbidden
                            .iter()
                            .any(|name| provider.facts.traits.contains(name))
                })
                .collect::<BTreeSet<usize>>()
        });
    if anchor_roots.as_ref().is_some_and(BTreeSet::is_empty) {
        return Ok(Outcome::default());
    }
    let context = Context {
        providers,
        sharing,
        has_trees: providers.iter().any(|provider| provider.parent.is_some()),
        anchor_roots,
        by_uuid: providers
            .iter()
            .enumerate()
            .map(|(index, provider)| (provider.uuid, index))
            .collect(),
    };
    let mut options = Vec::with_capacity(request.groups.len());
    for group in &request.groups {
        let found = one_group(&context, group);
        if found.is_empty() {
            return Ok(Outcome::default());
        }
        options.push(found);
    }
    generate::run(&context, request, &options, generation, stop)
}

/// The providers with room for `amount` of `class` (in the tree of `tree_root` if given), as
/// (provider, root) pairs.
fn with_resource(
    context: &Context,
    class: &str,
    amount: i64,
    tree_root: Option<usize>,
) -> BTreeSet<(usize, usize)> {
    context
        .providers
        .iter()
        .enumerate()
        .filter(|(_, provider)| tree_root.is_none_or(|root| provider.root == root))
        .filter(|(_, provider)| {
            provider
                .facts
                .classes
                .get(class)
                .is_some_and(|facts| facts.fits(amount))
        })
        .map(|(index, provider)| (index, provider.root))
        .collect()
}

/// What one group may take: whole partials (a granular group, or one on a single provider),
/// or, for the unsuffixed group spread over trees and sharing providers, the nominees of each
/// of its classes (combined by the search, one class at a time).
enum GroupOptions {
    Whole(Vec<Partial>),
    Spread(Nominees),
}

impl GroupOptions {
    fn is_empty(&self) -> bool {
        match self {
            GroupOptions::Whole(partials) => partials.is_empty(),
            GroupOptions::Spread(nominees) => nominees.is_empty(),
        }
    }
}

fn one_group(context: &Context, group: &Group) -> GroupOptions {
    let none = || GroupOptions::Whole(Vec::new());
    let in_aggregates =
        (!group.member_of.is_empty()).then(|| context.in_aggregates(&group.member_of));
    if in_aggregates.as_ref().is_some_and(BTreeSet::is_empty) {
        return none();
    }
    let tree_root = match group.in_tree {
        Some(uuid) => match context.by_uuid.get(&uuid) {
            Some(index) => Some(context.providers[*index].root),
            None => return none(),
        },
        None => None,
    };
    let spread = !group.same_provider() && (!context.sharing.is_empty() || context.has_trees);
    if !spread {
        let found = providers_matching(context, group, in_aggregates.as_ref(), tree_root);
        return GroupOptions::Whole(single_provider(context, group, &found));
    }
    let mut with: WithResource = Vec::new();
    for (class, amount) in &group.resources {
        let found = with_resource(context, class, *amount, tree_root);
        if found.is_empty() {
            return none();
        }
        with.push((class.clone(), *amount, found));
    }
    if !group.required.is_empty() {
        let any_trait = context.providers.iter().any(|provider| {
            group
                .required
                .iter()
                .flatten()
                .any(|name| provider.facts.traits.contains(name))
        });
        if !any_trait {
            return none();
        }
    }
    GroupOptions::Spread(trees_matching_all(
        context,
        group,
        &with,
        in_aggregates.as_ref(),
        tree_root,
    ))
}

/// `get_provider_ids_matching`: providers that alone meet the whole group — its traits,
/// aggregates and, for each class, room (in the tree of `in_tree`; a resourceless group looks
/// at every tree, as Placement's does).
fn providers_matching(
    context: &Context,
    group: &Group,
    in_aggregates: Option<&BTreeSet<usize>>,
    tree_root: Option<usize>,
) -> Vec<(usize, usize)> {
    let forbidden_aggregates: BTreeSet<&Uuid> = group.forbidden_aggregates.iter().collect();
    context
        .providers
        .iter()
        .enumerate()
        .filter(|(index, provider)| {
            let facts = &provider.facts;
            group
                .required
                .iter()
                .all(|any| any.iter().any(|name| facts.traits.contains(name)))
                && in_aggregates.is_none_or(|members| members.contains(index))
                && !facts
                    .aggregates
                    .iter()
                    .any(|aggregate| forbidden_aggregates.contains(aggregate))
                && !group
                    .forbidden
                    .iter()
                    .any(|name| facts.traits.contains(name))
                && (group.resources.is_empty()
                    || (tree_root.is_none_or(|root| provider.root == root)
                        && group.resources.iter().all(|(class, amount)| {
                            facts
                                .classes
                                .get(class)
                                .is_some_and(|room| room.fits(*amount))
                        })))
        })
        .map(|(index, provider)| (index, provider.root))
        .collect()
}

fn single_provider(context: &Context, group: &Group, found: &[(usize, usize)]) -> Vec<Partial> {
    let mut partials = Vec::new();
    for &(provider, root) in found {
        let candidate = Candidate {
            amounts: group
                .resources
                .iter()
                .map(|(class, amount)| ((provider, class.clone()), *amount))
                .collect(),
            anchor: root,
            mappings: BTreeMap::from([(group.suffix.clone(), BTreeSet::from([provider]))]),
        };
        if context.in_filtered_anchors(root) {
            partials.push(Partial {
                candidate: candidate.clone(),
                same_provider: group.same_provider(),
            });
        }
        if context.has_trait(provider, SHARING_TRAIT) {
            for (_, anchor) in context.anchors_for_sharing(&BTreeSet::from([provider])) {
                if anchor == root || !context.in_filtered_anchors(anchor) {
                    continue;
                }
                let mut shared = candidate.clone();
                shared.anchor = anchor;
                partials.push(Partial {
                    candidate: shared,
                    same_provider: group.same_provider(),
                });
            }
        }
    }
    partials
}

/// (provider, anchor root, class) triples that together can meet the group.
type Nominees = BTreeSet<(usize, usize, String)>;

/// `get_trees_matching_all`: per class, the providers of a tree (or lending to it) with room.
fn trees_matching_all(
    context: &Context,
    group: &Group,
    with: &WithResource,
    in_aggregates: Option<&BTreeSet<usize>>,
    tree_root: Option<usize>,
) -> Nominees {
    let bad_aggregates = (!group.forbidden_aggregates.is_empty())
        .then(|| context.in_aggregates(std::slice::from_ref(&group.forbidden_aggregates)));
    let trees = |nominees: &Nominees| -> BTreeSet<usize> {
        nominees.iter().map(|(_, root, _)| *root).collect()
    };
    let mut all: Nominees = BTreeSet::new();
    for (class, _, found) in with {
        let scope = NomineeScope {
            in_aggregates,
            tree_root,
            bad_aggregates: bad_aggregates.as_ref(),
        };
        let for_class = nominees_for_class(context, class, found, &scope);
        if for_class.is_empty() {
            return BTreeSet::new();
        }
        if all.is_empty() {
            all = for_class;
        } else {
            let both: BTreeSet<usize> = trees(&all)
                .intersection(&trees(&for_class))
                .copied()
                .collect();
            all.extend(for_class);
            all.retain(|(_, root, _)| both.contains(root));
        }
        if all.is_empty() {
            return BTreeSet::new();
        }
    }
    if (group.required.is_empty() && group.forbidden.is_empty()) || !context.sharing.is_empty() {
        return all;
    }
    let keep_roots = trees_with_traits(context, group, &all);
    all.retain(|(p, root, _)| *root == context.providers[*p].root && keep_roots.contains(root));
    all
}

/// Where nominees of a class may come from: members of these aggregates (when given), of
/// this tree only (when given: no lenders then), of none of these (forbidden aggregates).
struct NomineeScope<'a> {
    in_aggregates: Option<&'a BTreeSet<usize>>,
    tree_root: Option<usize>,
    bad_aggregates: Option<&'a BTreeSet<usize>>,
}

/// The nominees for `class`: the providers with room for it (`found`, with their roots), and
/// the sharing providers among them lending to each tree they can anchor, within `scope`.
fn nominees_for_class(
    context: &Context,
    class: &str,
    found: &BTreeSet<(usize, usize)>,
    scope: &NomineeScope,
) -> Nominees {
    let mut for_class: Nominees = found
        .iter()
        .map(|(p, root)| (*p, *root, class.to_owned()))
        .collect();
    let ids: BTreeSet<usize> = found.iter().map(|(p, _)| *p).collect();
    let lenders: BTreeSet<usize> = context
        .sharing
        .iter()
        .filter(|p| {
            scope
                .in_aggregates
                .is_none_or(|members| members.contains(p))
        })
        .filter(|p| ids.contains(p))
        .copied()
        .collect();
    if !lenders.is_empty() && scope.tree_root.is_none() {
        for (lender, anchor) in context.anchors_for_sharing(&lenders) {
            for_class.insert((lender, anchor, class.to_owned()));
        }
    }
    if let Some(roots) = &context.anchor_roots {
        for_class.retain(|(_, root, _)| roots.contains(root));
    }
    if let Some(members) = scope.in_aggregates {
        for_class.retain(|(p, root, _)| members.contains(p) || members.contains(root));
    }
    if let Some(bad) = scope.bad_aggregates {
        for_class.retain(|(p, root, _)| !bad.contains(p) && !bad.contains(root));
    }
    for_class
}

/// `_get_trees_with_traits`: the roots of the trees whose nominated providers (those without a
/// forbidden trait) together have every required trait.
fn trees_with_traits(context: &Context, group: &Group, all: &Nominees) -> BTreeSet<usize> {
    let nominated: BTreeSet<usize> = all.iter().map(|(p, _, _)| *p).collect();
    let good: BTreeSet<usize> = nominated
        .iter()
        .filter(|p| {
            !group
                .forbidden
                .iter()
                .any(|name| context.has_trait(**p, name))
        })
        .copied()
        .collect();
    if group.required.is_empty() {
        return good.iter().map(|p| context.providers[*p].root).collect();
    }
    let mut traits_by_root: BTreeMap<usize, BTreeSet<&str>> = BTreeMap::new();
    for p in &good {
        traits_by_root
            .entry(context.providers[*p].root)
            .or_default()
            .extend(
                context.providers[*p]
                    .facts
                    .traits
                    .iter()
                    .map(String::as_str),
            );
    }
    traits_by_root
        .into_iter()
        .filter(|(_, traits)| {
            group
                .required
                .iter()
                .all(|any| any.iter().any(|name| traits.contains(name.as_str())))
        })
        .map(|(root, _)| root)
        .collect()
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

mod generate;
mod search;

pub use generate::{Generation, Strategy};
pub use search::Stopped;

#[cfg(test)]
mod tests;
