//! LoRA: only the adapters train, and a resumed run continues bit for bit. In the `seeded` binary
//! (`tests/seeded.rs`): the adapters are drawn from Burn's device RNG, which the tests of the
//! `runtime` binary, running in parallel threads, also draw from, so there two runs of this
//! test could start from different adapters.

use std::path::Path;

use burn::module::Module;
use burn_experiment::checkpoint::Resume;
use burn_experiment::prelude::*;

use crate::common::*;
use crate::tuned::{options, run};

/// The effective weights of a model with LoRA adapters: what its forward pass uses.
fn effective(model: &Classifier) -> Vec<u32> {
    use burn::module::ModuleVisitor;
    struct Values(Vec<u32>);
    impl ModuleVisitor for Values {
        fn visit_float<const D: usize>(
            &mut self,
            param: &burn::module::Param<burn::tensor::Tensor<D>>,
        ) {
            let data = param.val().into_data();
            self.0.extend(data.iter::<f32>().map(f32::to_bits));
        }
    }
    let mut values = Values(Vec::new());
    model.visit(&mut values);
    values.0
}

#[test]
fn lora_trains_adapters_only_and_resumes_bit_for_bit() {
    use burn_experiment::config::spec::LoraSpec;
    let _one = crate::one_at_a_time();
    let (whole_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let lora = LoraSpec {
        rank: 2,
        alpha: 4.0,
        on: vec!["mlp.fc1".into(), "mlp.fc2".into()],
    };
    let adapted = |dir: &Path, epochs: usize, resume: Option<Resume>| FitOptions {
        lora: Some(lora.clone()),
        resume,
        ..options(dir, epochs)
    };
    let whole = run(adapted(whole_dir.path(), 3, None)).unwrap();
    let (initial, trained) = (mlp(3).weights(), whole.model.mlp.weights());
    // Biases get no adapter and stay frozen; the weights the forward pass uses (base plus
    // adapters) moved.
    let biases = |w: &[u32]| [w[64..80].to_vec(), w[w.len() - 3..].to_vec()].concat();
    assert_eq!(biases(&trained), biases(&initial), "biases frozen");
    assert_ne!(trained[..64], initial[..64], "adapted fc1 weight");
    assert_ne!(
        effective(&whole.model),
        effective(&classifier()),
        "adapters trained"
    );
    let losses = whole.history.train_losses();
    assert!(losses.last() < losses.first(), "{losses:?}");

    run(adapted(dir.path(), 1, None)).unwrap();
    let resumed = run(adapted(dir.path(), 3, Some(Resume::Latest))).unwrap();
    assert_bit_identical(&resumed.history.train_losses(), &losses);
    assert_eq!(effective(&resumed.model), effective(&whole.model));
}
