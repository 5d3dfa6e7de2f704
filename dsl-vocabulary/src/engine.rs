//! What only this crate's fit loop does: an experiment that can run on Burn's engine (an
//! `engine`, `strategy` or `devices` key) cannot use these, since Burn's Learner has no hook that
//! can stop a run or save state in its checkpoints, none that averages weights after each step,
//! and its checkpoints carry no history to find the best epoch by. The macro refuses them at
//! compile time; the runtime refuses those a command line can set.

/// One feature of our loop alone.
pub struct OursOnly {
    /// Its key, as `training!` writes it (`test`, `augment`: keys of `loader`).
    pub key: &'static str,
    /// The feature, as the start of "… needs this crate's fit loop".
    pub needs: &'static str,
}

/// Every feature of our loop alone.
pub const OURS_ONLY: &[OursOnly] = &[
    OursOnly {
        key: "callbacks",
        needs: "callbacks need",
    },
    OursOnly {
        key: "after_step",
        needs: "a hook on the model after each optimizer step needs",
    },
    OursOnly {
        key: "at_epoch_end",
        needs: "a hook reading the model at each epoch's end needs",
    },
    OursOnly {
        key: "test",
        needs: "a test split needs",
    },
    OursOnly {
        key: "augment",
        needs: "augmentation needs",
    },
    OursOnly {
        key: "ema",
        needs: "a moving average needs",
    },
    OursOnly {
        key: "data_parallel",
        needs: "data-parallel training over MPI needs",
    },
    OursOnly {
        key: "lora",
        needs: "LoRA needs",
    },
    OursOnly {
        key: "init_from",
        needs: "starting from saved weights needs",
    },
    OursOnly {
        key: "freeze",
        needs: "freezing needs",
    },
    OursOnly {
        key: "lr_schedule",
        needs: "a plateau schedule needs",
    },
    OursOnly {
        key: "gradient_checkpointing",
        needs: "gradient checkpointing needs",
    },
    OursOnly {
        key: "precision",
        needs: "mixed precision needs",
    },
];
