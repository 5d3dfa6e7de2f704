//! Loads the best checkpoint of [`checkpointing::Resumable`] (lowest validation loss) and
//! measures it on samples 120..180, which training never saw.

use std::process::ExitCode;

use burn::tensor::Device;
use checkpointing::Resumable;
use seed::{SampleBatcher, samples};

fn main() -> ExitCode {
    let evaluated = Resumable::load_best(&Device::flex()).and_then(|(epoch, model)| {
        Ok((
            epoch,
            Resumable::evaluate(&model, samples(120..180), SampleBatcher)?,
        ))
    });
    match evaluated {
        Ok((epoch, test)) => {
            println!(
                "best epoch {epoch}: test loss {:.4}, test accuracy {:.2}%",
                test.get("loss").unwrap_or(f64::NAN),
                test.get("accuracy").unwrap_or(f64::NAN)
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err} (train first: cargo run -p checkpointing --bin train)");
            ExitCode::FAILURE
        }
    }
}
