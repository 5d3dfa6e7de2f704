//! Trains the ring GAN (`--help` lists the flags), then draws `samples.svg` in the run
//! directory: 512 held-out points of the ring against 512 points the generator's moving average
//! makes from their noise, and prints how many of the eight modes the generated points reach.

use burn::module::Module;
use gan::{RADIUS, RingGan};

/// The held-out items drawn and generated from.
const SHOWN: std::ops::Range<usize> = 2048..2560;

fn main() -> std::process::ExitCode {
    RingGan::cli_then(|_config, report| {
        let device = report.model.devices()[0].clone();
        let real: Vec<[f32; 2]> = SHOWN.map(|k| gan::sample(k).point).collect();
        // The generator's moving average, as GANs are usually sampled.
        let generator = report.averaged.as_ref().unwrap_or(&report.model);
        let fake = generator.model.generate(SHOWN, &device);
        let path = report.run_dir.join("samples.svg");
        std::fs::write(&path, figure(&real, &fake)).map_err(|source| {
            burn_experiment::FitError::RunDir {
                path: path.clone(),
                source,
            }
        })?;
        let (modes, near) = gan::coverage(&fake);
        println!(
            "generated points: {modes} of 8 modes reached, {near:.0} % within 0.5 of the ring; figure: {}",
            path.display()
        );
        Ok(())
    })
}

/// Real points in grey, generated ones in orange, on a 6 × 6 square around the ring.
fn figure(real: &[[f32; 2]], fake: &[[f32; 2]]) -> String {
    const SIZE: f32 = 480.0;
    let span = 1.5 * RADIUS;
    let at = |v: f32| (v + span) / (2.0 * span) * SIZE;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{SIZE}\" height=\"{SIZE}\" viewBox=\"0 0 {SIZE} {SIZE}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (points, colour) in [(real, "#9e9e9e"), (fake, "#e65100")] {
        for [x, y] in points {
            if x.abs() < span && y.abs() < span {
                svg += &format!(
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\" fill=\"{colour}\" fill-opacity=\"0.6\"/>\n",
                    at(*x),
                    SIZE - at(*y)
                );
            }
        }
    }
    svg += "<text x=\"10\" y=\"20\" font-family=\"sans-serif\" font-size=\"14\" fill=\"#616161\">data (grey) and generated (orange)</text>\n</svg>\n";
    svg
}
