//! The candidates of one anchor tree, made one at a time (`_merge_candidates`, lazily): a
//! depth-first search over the request's slots — a granular (or unspread) group takes one of
//! its partials, each class of a spread group one of its nominees — in the order of a
//! cartesian product (the last slot varying fastest), pruning a choice as soon as it breaks
//! capacity, `group_policy=isolate`, a spread group's traits or (before 1.29) one provider per
//! tree. Memory is the depth of the request; nothing is combined that is not returned.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Candidate, Context, Partial, Request, same_subtree};

/// What one slot of the search chooses from.
pub(super) enum Slot<'a> {
    /// Group `group` takes one of these partials whole.
    Whole {
        group: usize,
        options: Vec<&'a Partial>,
    },
    /// Class `class` of spread group `group` comes from one of these providers; `last` on the
    /// group's last class (its required traits are checked there).
    Class {
        group: usize,
        class: &'a str,
        amount: i64,
        options: Vec<usize>,
        last: bool,
    },
}

/// What the choice at one depth added, to take it back.
struct Chosen<'a> {
    group: usize,
    adds: Vec<(usize, &'a str, i64)>,
    /// The providers the group's mapping gets from this choice.
    mapped: Vec<usize>,
    /// The provider a same-provider group took (group_policy=isolate).
    isolated: Option<usize>,
}

/// The search of one anchor tree, resumable: `next` returns its next candidate.
pub(super) struct Search<'a> {
    context: &'a Context<'a>,
    request: &'a Request,
    anchor: usize,
    slots: Vec<Slot<'a>>,
    /// Per depth: the next option to try.
    next_option: Vec<usize>,
    chosen: Vec<Chosen<'a>>,
    amounts: HashMap<(usize, &'a str), i64>,
    /// Providers amounts are taken from, with how many choices take from them.
    used: HashMap<usize, usize>,
    isolated: BTreeSet<usize>,
    /// Per group of the request: the providers of its mapping so far.
    mapped: Vec<Vec<usize>>,
    finished: bool,
}

/// The search was stopped from outside (its deadline passed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// How often (in choices tried) a search asks whether it must stop.
const STOP_CHECK_EVERY: u32 = 1024;

impl<'a> Search<'a> {
    pub(super) fn new(
        context: &'a Context<'a>,
        request: &'a Request,
        anchor: usize,
        slots: Vec<Slot<'a>>,
    ) -> Search<'a> {
        let mut search = Search {
            context,
            request,
            anchor,
            next_option: vec![0; slots.len()],
            slots,
            chosen: Vec::new(),
            amounts: HashMap::new(),
            used: HashMap::new(),
            isolated: BTreeSet::new(),
            mapped: vec![Vec::new(); request.groups.len()],
            finished: false,
        };
        search.finished = !search.promising();
        search
    }

    /// The next candidate of this tree; `None` when there is none left; `Stopped` when
    /// `stop` said so (asked every `STOP_CHECK_EVERY` choices).
    pub(super) fn next(
        &mut self,
        steps: &mut u32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Candidate>, Stopped> {
        loop {
            if self.finished {
                return Ok(None);
            }
            let depth = self.chosen.len();
            if depth == self.slots.len() {
                let candidate = self.candidate();
                self.take_back();
                if self.slots.is_empty() {
                    self.finished = true;
                }
                if same_subtree(self.context, self.request, &candidate) {
                    return Ok(Some(candidate));
                }
                continue;
            }
            let option = self.next_option[depth];
            if option >= self.options_at(depth) {
                self.next_option[depth] = 0;
                if depth == 0 {
                    self.finished = true;
                    return Ok(None);
                }
                self.take_back();
                continue;
            }
            self.next_option[depth] += 1;
            *steps += 1;
            if steps.is_multiple_of(STOP_CHECK_EVERY) && stop() {
                return Err(Stopped);
            }
            if let Some(choice) = self.choice(depth, option) {
                self.apply(choice);
                if !self.promising() {
                    self.take_back();
                }
            }
        }
    }

    fn options_at(&self, depth: usize) -> usize {
        match &self.slots[depth] {
            Slot::Whole { options, .. } => options.len(),
            Slot::Class { options, .. } => options.len(),
        }
    }

    /// The choice of `option` at `depth`, if it keeps the request satisfiable so far.
    fn choice(&self, depth: usize, option: usize) -> Option<Chosen<'a>> {
        let chosen = match &self.slots[depth] {
            Slot::Whole { group, options } => {
                let partial = options[option];
                let mapped: Vec<usize> = partial
                    .candidate
                    .mappings
                    .values()
                    .flatten()
                    .copied()
                    .collect();
                let isolated = (partial.same_provider && self.request.isolate)
                    .then(|| mapped.first().copied())
                    .flatten();
                if isolated.is_some_and(|provider| self.isolated.contains(&provider)) {
                    return None;
                }
                Chosen {
                    group: *group,
                    adds: partial
                        .candidate
                        .amounts
                        .iter()
                        .map(|((provider, class), amount)| (*provider, class.as_str(), *amount))
                        .collect(),
                    mapped,
                    isolated,
                }
            }
            Slot::Class {
                group,
                class,
                amount,
                options,
                last,
            } => {
                let provider = options[option];
                if !self.spread_traits_hold(*group, provider, *last) {
                    return None;
                }
                Chosen {
                    group: *group,
                    adds: vec![(provider, *class, *amount)],
                    mapped: vec![provider],
                    isolated: None,
                }
            }
        };
        (self.fits(&chosen.adds) && self.one_per_tree(&chosen.adds)).then_some(chosen)
    }

    /// Says whether the slots still to fill can be filled, as far as cheap counts tell: the
    /// isolated groups left have as many distinct providers left, and each class asked for
    /// has as much room left among the providers that could give it. A search that would
    /// find nothing below this point is cut here.
    fn promising(&self) -> bool {
        let rest = &self.slots[self.chosen.len()..];
        let mut isolated_left = 0usize;
        let mut free: BTreeSet<usize> = BTreeSet::new();
        let mut demand: HashMap<&str, i64> = HashMap::new();
        let mut givers: HashMap<&str, BTreeSet<usize>> = HashMap::new();
        for slot in rest {
            match slot {
                Slot::Whole { group, options } => {
                    let isolated =
                        self.request.isolate && !self.request.groups[*group].suffix.is_empty();
                    if isolated {
                        isolated_left += 1;
                    }
                    for (class, amount) in &self.request.groups[*group].resources {
                        *demand.entry(class.as_str()).or_insert(0) += amount;
                    }
                    for partial in options {
                        for provider in partial.candidate.mappings.values().flatten() {
                            if isolated && !self.isolated.contains(provider) {
                                free.insert(*provider);
                            }
                        }
                        for (provider, class) in partial.candidate.amounts.keys() {
                            givers.entry(class.as_str()).or_default().insert(*provider);
                        }
                    }
                }
                Slot::Class {
                    class,
                    amount,
                    options,
                    ..
                } => {
                    *demand.entry(class).or_insert(0) += amount;
                    givers
                        .entry(class)
                        .or_default()
                        .extend(options.iter().copied());
                }
            }
        }
        if isolated_left > free.len() {
            return false;
        }
        demand.iter().all(|(class, wanted)| {
            let room: i64 = givers.get(class).map_or(0, |providers| {
                providers
                    .iter()
                    .map(|provider| self.room(*provider, class))
                    .sum()
            });
            room >= *wanted
        })
    }

    /// What provider `provider` can still give of `class` in this search.
    fn room(&self, provider: usize, class: &str) -> i64 {
        let taken = self.amounts.get(&(provider, class)).copied().unwrap_or(0);
        self.context.providers[provider]
            .facts
            .classes
            .get(class)
            .map_or(0, |facts| (facts.capacity() - facts.used - taken).max(0))
    }

    /// A spread group's provider has none of its forbidden traits; on its last class, the
    /// group's providers together have every required one.
    fn spread_traits_hold(&self, group: usize, provider: usize, last: bool) -> bool {
        let rules = &self.request.groups[group];
        if rules
            .forbidden
            .iter()
            .any(|name| self.context.has_trait(provider, name))
        {
            return false;
        }
        if !last || rules.required.is_empty() {
            return true;
        }
        let providers: Vec<usize> = self.mapped[group]
            .iter()
            .copied()
            .chain(std::iter::once(provider))
            .collect();
        rules.required.iter().all(|any| {
            any.iter().any(|name| {
                providers
                    .iter()
                    .any(|provider| self.context.has_trait(*provider, name))
            })
        })
    }

    /// The amounts so far plus `adds` stay within each provider's capacity and max_unit.
    fn fits(&self, adds: &[(usize, &'a str, i64)]) -> bool {
        let mut extra: Vec<((usize, &str), i64)> = Vec::with_capacity(adds.len());
        for (provider, class, amount) in adds {
            let key = (*provider, *class);
            let before = self.amounts.get(&key).copied().unwrap_or(0)
                + extra
                    .iter()
                    .filter(|(seen, _)| *seen == key)
                    .map(|(_, amount)| amount)
                    .sum::<i64>();
            let total = before + amount;
            let room = self.context.providers[*provider]
                .facts
                .classes
                .get(*class)
                .is_some_and(|facts| {
                    facts.used + total <= facts.capacity() && total <= facts.max_unit
                });
            if !room {
                return false;
            }
            extra.push((key, *amount));
        }
        true
    }

    /// Before 1.29, a candidate takes from at most one provider of each tree.
    fn one_per_tree(&self, adds: &[(usize, &'a str, i64)]) -> bool {
        if self.request.nested_aware || !self.context.has_trees {
            return true;
        }
        let providers = &self.context.providers;
        let mut used: Vec<usize> = self.used.keys().copied().collect();
        for (provider, _, _) in adds {
            if used.contains(provider) {
                continue;
            }
            if used
                .iter()
                .any(|other| providers[*other].root == providers[*provider].root)
            {
                return false;
            }
            used.push(*provider);
        }
        true
    }

    fn apply(&mut self, chosen: Chosen<'a>) {
        for (provider, class, amount) in &chosen.adds {
            *self.amounts.entry((*provider, *class)).or_insert(0) += amount;
            *self.used.entry(*provider).or_insert(0) += 1;
        }
        if let Some(provider) = chosen.isolated {
            self.isolated.insert(provider);
        }
        self.mapped[chosen.group].extend(chosen.mapped.iter().copied());
        self.chosen.push(chosen);
    }

    /// Takes back the last choice.
    fn take_back(&mut self) {
        let Some(chosen) = self.chosen.pop() else {
            return;
        };
        for (provider, class, amount) in &chosen.adds {
            let key = (*provider, *class);
            if let Some(total) = self.amounts.get_mut(&key) {
                *total -= amount;
                if *total == 0 {
                    self.amounts.remove(&key);
                }
            }
            if let Some(count) = self.used.get_mut(provider) {
                *count -= 1;
                if *count == 0 {
                    self.used.remove(provider);
                }
            }
        }
        if let Some(provider) = chosen.isolated {
            self.isolated.remove(&provider);
        }
        let mapped = &mut self.mapped[chosen.group];
        mapped.truncate(mapped.len() - chosen.mapped.len());
    }

    /// The candidate the current choices make.
    fn candidate(&self) -> Candidate {
        let mut mappings: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for chosen in &self.chosen {
            mappings
                .entry(self.request.groups[chosen.group].suffix.clone())
                .or_default()
                .extend(chosen.mapped.iter().copied());
        }
        Candidate {
            amounts: self
                .amounts
                .iter()
                .map(|((provider, class), amount)| ((*provider, (*class).to_owned()), *amount))
                .collect(),
            anchor: self.anchor,
            mappings,
        }
    }
}
