//! A callback that holds an `Rc` (or a `RefCell`, anything not `Send`): the loop calls its
//! hooks on the thread that runs it, so nothing asks for `Send`.
use std::cell::Cell;
use std::rc::Rc;

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

thread_local! {
    /// The epochs the callback saw, shared with the test through an `Rc`.
    static SEEN: Rc<Cell<usize>> = Rc::new(Cell::new(0));
}

struct CountEpochs {
    seen: Rc<Cell<usize>>,
}

impl CountEpochs {
    fn new() -> Self {
        Self {
            seen: SEEN.with(Rc::clone),
        }
    }
}

impl Callback for CountEpochs {
    fn epoch_end(&mut self, _end: &EpochEnd) -> Control {
        self.seen.set(self.seen.get() + 1);
        Control::Continue
    }
}

training! {
    name: Counted,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 2,
    callbacks: [CountEpochs::new()],
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-counted-{}", std::process::id()));
    let config = CountedConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..Counted::config()
    };
    let report = Counted::with_config(config, &burn::tensor::Device::flex()).unwrap();
    assert_eq!(report.last_epoch, 2);
    assert_eq!(SEEN.with(|seen| seen.get()), 2, "the callback's Rc saw both epochs");
    let _ = std::fs::remove_dir_all(dir);
}
