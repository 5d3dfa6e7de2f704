//! The figure the README states: the CNN tells the three shapes apart on held-out images, and
//! its augmented run is the same with 0 and 2 loader workers.

use shapes::{Shapes, ShapesConfig};

fn train(workers: usize) -> burn_experiment::FitReport<shapes::ShapesModel> {
    let dir = tempfile::tempdir().unwrap();
    let config = ShapesConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        workers,
        ..Shapes::config()
    };
    Shapes::with_options(config, &burn::tensor::Device::flex(), |o| o.quiet = true).unwrap()
}

#[test]
fn the_cnn_recognises_held_out_shapes_and_workers_change_nothing() {
    let (alone, helped) = (train(0), train(2));
    let accuracy = alone.test.as_ref().unwrap().get("accuracy").unwrap();
    assert!(accuracy >= 95.0, "test accuracy {accuracy}");
    let bits = |losses: Vec<f32>| losses.iter().map(|l| l.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(alone.history.train_losses()),
        bits(helped.history.train_losses())
    );
    println!("shapes: test accuracy {accuracy:.1} %");
}
