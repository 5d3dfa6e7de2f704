//! Sequences of 2 to 12 token ids (vocabulary 10), labelled by whether token 7 occurs in them.
//! `#[derive(Batch)]` pads each batch to its longest sequence and hands the model a mask, which
//! the model uses to average only over real tokens: an embedding, a masked mean, a linear head.

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::{Device, Tensor};
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

/// Distinct token ids; 0 is kept for padding.
pub const VOCABULARY: usize = 10;
/// The token whose presence is the label.
pub const MARKER: usize = 7;

/// One sequence and its label (1 when it holds [`MARKER`]).
#[derive(Clone, Debug, Batch)]
pub struct Sentence {
    #[pad(0)]
    pub tokens: Vec<usize>,
    pub label: usize,
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Sentence `k`: its length and tokens (1..VOCABULARY) come from `k`; half of them hold the
/// marker.
pub fn sentence(k: usize) -> Sentence {
    let draw = |salt: u64| mix((k as u64) << 8 | salt);
    let length = 2 + draw(0) as usize % 11;
    let mut tokens: Vec<usize> = (0..length)
        .map(|i| 1 + draw(1 + i as u64) as usize % (VOCABULARY - 1))
        .map(|t| if t == MARKER { MARKER + 1 } else { t })
        .collect();
    if k % 2 == 1 {
        tokens[draw(99) as usize % length] = MARKER;
    }
    let label = usize::from(tokens.contains(&MARKER));
    Sentence { tokens, label }
}

/// Sentences `range`.
pub fn sentences(range: std::ops::Range<usize>) -> burn::data::dataset::InMemDataset<Sentence> {
    burn::data::dataset::InMemDataset::new(range.map(sentence).collect())
}

/// Embedding → mean over the real tokens (the mask) → linear.
#[derive(Module, Debug)]
pub struct BagOfTokens {
    embedding: Embedding,
    head: Linear,
}

impl BagOfTokens {
    pub fn new(device: &Device) -> Self {
        Self {
            embedding: EmbeddingConfig::new(VOCABULARY, 16).init(device),
            head: LinearConfig::new(16, 2).init(device),
        }
    }

    pub fn forward(&self, batch: SentenceBatch) -> ClassificationOutput {
        let embedded = self.embedding.forward(batch.tokens); // [n, longest, 16]
        // Floats the model makes itself take the type of the values they meet: f32, or bf16
        // in a `precision: bf16` run (`.float()` gives the device's default, f32).
        let dtype = embedded.dtype();
        let mask: Tensor<3> = batch.tokens_mask.float().cast(dtype).unsqueeze_dim(2); // [n, longest, 1]
        let lengths: Tensor<2> = batch.tokens_lengths.float().cast(dtype).unsqueeze_dim(1); // [n, 1]
        let summed: Tensor<2> = (embedded * mask).sum_dim(1).squeeze_dims(&[1]);
        let output = self.head.forward(summed / lengths);
        let targets = batch.label;
        let loss = CrossEntropyLossConfig::new()
            .init(&output.device())
            .forward(output.clone(), targets.clone());
        ClassificationOutput {
            loss,
            output,
            targets,
        }
    }
}

training! {
    /// Does the sequence hold the marker token?
    name: pub Sequences,
    model: BagOfTokens = BagOfTokens::new(device),
    step: |model, batch: SentenceBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: sentences(0..400),
        valid: sentences(400..500),
        batcher: SentenceBatcher,
        batch_size: 20,
        shuffle: 9,
    },
    optimizer: adam(lr = 3e-2),
    epochs: 10,
    seed: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
}
