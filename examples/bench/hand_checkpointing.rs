//! The hand-written seed experiment of `hand_classification.rs` plus what any training script
//! that can be resumed needs: model and optimizer saved as burnpack files after every epoch, and
//! loaded again with `hand-checkpointing <dir> <epoch>`. The second baseline of the README's
//! compile-time comparison: Burn's record code for saving and loading a model is compiled in the
//! experiment's crate whoever writes the loop.

use std::path::PathBuf;

use burn::data::dataloader::DataLoaderBuilder;
use burn::module::Module;
use burn::optim::{GradientsParams, OptimizerRecord, SgdConfig};
use burn::store::ModuleRecord;
use burn::tensor::{Bytes, Device};
use seed::{Mlp, SampleBatcher, samples};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "artifacts/hand".into()));
    let resume: Option<usize> = args.next().map(|epoch| epoch.parse()).transpose()?;
    std::fs::create_dir_all(&dir)?;
    let device = Device::flex().autodiff();
    let train = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(16)
        .set_device(device.clone())
        .build(samples(0..96));
    let mut model = Mlp::new(3, &device);
    let mut optim = SgdConfig::new().init();
    let mut first = 1;
    if let Some(epoch) = resume {
        model =
            model.try_load_record(ModuleRecord::load(dir.join(format!("model-{epoch}.bpk")))?)?;
        let optim_file = std::fs::read(dir.join(format!("optim-{epoch}.bpk")))?;
        optim = optim.load_record(OptimizerRecord::from_bytes(Bytes::from_bytes_vec(
            optim_file,
        ))?);
        first = epoch + 1;
    }
    for epoch in first..=3 {
        let mut losses = Vec::new();
        for batch in train.iter() {
            let out = model.forward_classification(batch?);
            losses.push(out.loss.clone().into_scalar::<f32>());
            let grads = GradientsParams::from_grads(out.loss.backward(), &model);
            model = optim.step(0.1, model, grads);
        }
        model
            .clone()
            .into_record()
            .save(dir.join(format!("model-{epoch}.bpk")))?;
        std::fs::write(
            dir.join(format!("optim-{epoch}.bpk")),
            optim.to_record().into_bytes()?.to_vec(),
        )?;
        let mean = losses.iter().sum::<f32>() / losses.len() as f32;
        println!("epoch {epoch}: train loss {mean:.4}");
    }
    Ok(())
}
