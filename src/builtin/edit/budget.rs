//! The hard budget of the fuzzy strategies: a cap on the work (dynamic-programme cells) each expensive strategy
//! may spend, and the cancellation check made between windows, every few dozen columns of a distance and every
//! few hundred lines of the linear strategies. When either runs out the strategy stops and keeps the best
//! candidate it has, so a miss on a huge file answers in bounded time and a cancelled turn frees its core within
//! milliseconds.
//!
//! Owns counting only; it knows nothing of strategies or text.

use std::cell::Cell;

/// Cells one expensive strategy (relaxed block anchor, multi-occurrence, did-you-mean) may compute. The
/// bit-parallel distance computes 64 cells per word step, so this is ~190k steps, 1–3 ms of work; a whole miss
/// that runs into every cap stays well inside 50 ms (benches/edit.rs).
pub const CELLS_PER_STRATEGY: u64 = 12_000_000;

/// Lines a linear strategy walks between two cancellation checks (a few microseconds of work).
pub const LINES_PER_CANCEL_CHECK: usize = 256;

/// The budget of one cascade run.
pub struct Budget<'a> {
    cancelled: Option<&'a (dyn Fn() -> bool + Sync)>,
    per_strategy: u64,
    ran_out: Cell<bool>,
}

impl<'a> Budget<'a> {
    /// The default allotment, checking `cancelled` as it goes.
    pub fn new(cancelled: Option<&'a (dyn Fn() -> bool + Sync)>) -> Self {
        Self::with_cells(cancelled, CELLS_PER_STRATEGY)
    }

    pub fn with_cells(cancelled: Option<&'a (dyn Fn() -> bool + Sync)>, per_strategy: u64) -> Self {
        Self { cancelled, per_strategy, ran_out: Cell::new(false) }
    }

    /// No cap and no cancellation (tests, and callers that already bound the input).
    pub fn unlimited() -> Budget<'static> {
        Budget { cancelled: None, per_strategy: u64::MAX, ran_out: Cell::new(false) }
    }

    /// A fresh allotment for one strategy.
    pub fn meter(&self) -> Meter<'_> {
        Meter { budget: self, left: Cell::new(self.per_strategy) }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_some_and(|cancelled| cancelled())
    }

    /// For the linear strategies' loops: has the turn been cancelled, asked at every
    /// [`LINES_PER_CANCEL_CHECK`]th line `i` only.
    pub fn cancelled_at(&self, i: usize) -> bool {
        i.is_multiple_of(LINES_PER_CANCEL_CHECK) && self.is_cancelled()
    }

    /// Did any strategy stop early (budget spent or cancelled)?
    pub fn ran_out(&self) -> bool {
        self.ran_out.get()
    }
}

/// One strategy's share of the [`Budget`].
pub struct Meter<'a> {
    budget: &'a Budget<'a>,
    left: Cell<u64>,
}

impl Meter<'_> {
    /// Spend `cells`; `false` (and from then on always `false`) when the allotment is spent or the turn was
    /// cancelled: the caller stops.
    pub fn charge(&self, cells: u64) -> bool {
        if self.left.get() < cells || self.budget.is_cancelled() {
            self.left.set(0);
            self.budget.ran_out.set(true);
            return false;
        }
        self.left.set(self.left.get() - cells);
        true
    }

    pub fn spent(&self) -> bool {
        self.left.get() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_meter_refuses_work_beyond_its_allotment_and_records_that_it_ran_out() {
        let budget = Budget::with_cells(None, 10);
        let meter = budget.meter();
        assert_eq!((meter.charge(6), meter.charge(4), budget.ran_out()), (true, true, false));
        assert_eq!((meter.charge(1), meter.spent(), budget.ran_out()), (false, true, true));
        assert!(budget.meter().charge(10), "every strategy has its own allotment");
    }

    #[test]
    fn a_cancelled_budget_refuses_all_further_work() {
        let flag = AtomicBool::new(false);
        let cancelled = || flag.load(Ordering::Relaxed);
        let budget = Budget::new(Some(&cancelled));
        let meter = budget.meter();
        assert!(meter.charge(1));
        flag.store(true, Ordering::Relaxed);
        assert_eq!((meter.charge(1), budget.is_cancelled(), budget.ran_out()), (false, true, true));
    }
}
