//! The `pass/` cases: experiments that must compile and run. They are modules of this one test
//! binary rather than trybuild cases, so they build with the workspace (trybuild would build
//! Burn once more, with codegen, only for them).
//!
//! They run one at a time: the device's random generator is one per process, and a case that
//! seeds it (`seed: 42`) or draws from it (LoRA adapters) while another builds its model would
//! change that model's weights, which `fine_tune` compares bit for bit.

/// Held by each case while it runs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! pass {
    ($($path:literal => $case:ident),* $(,)?) => {$(
        #[allow(dead_code)]
        #[path = $path]
        mod $case;

        #[test]
        fn $case() {
            let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
            $case::main();
        }
    )*};
}

pass!(
    "../pass/training/minimal.rs" => minimal,
    "../pass/training/full.rs" => full,
    "../pass/training/two_experiments_one_model.rs" => two_experiments_one_model,
    "../pass/training/derived_types.rs" => derived_types,
    "../pass/training/extended.rs" => extended,
    "../pass/training/fine_tune.rs" => fine_tune,
    "../pass/training/augment.rs" => augment,
    "../pass/training/sweep.rs" => sweep,
    "../pass/training/hparams.rs" => hparams,
    "../pass/training/step_epochs.rs" => step_epochs,
    "../pass/training/inside_a_function.rs" => inside_a_function,
    "../pass/training/items_without_clone.rs" => items_without_clone,
    "../pass/training/several_optimizers.rs" => several_optimizers,
    "../pass/training/callback_holding_an_rc.rs" => callback_holding_an_rc,
    "../pass/training/names_of_users_own_items.rs" => names_of_users_own_items,
    "../pass/training/constants.rs" => constants,
);
