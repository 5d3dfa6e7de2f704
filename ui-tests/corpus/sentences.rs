//! Padded token sequences into an embedding model whose sizes are hyperparameters, a callback
//! that counts steps, gradient accumulation and a sweep.
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

#[derive(Clone, Debug, Batch)]
pub struct Sentence {
    #[pad(0)]
    pub tokens: Vec<usize>,
    pub label: usize,
}

fn sentences(count: usize, vocabulary: usize) -> InMemDataset<Sentence> {
    InMemDataset::new(
        (0..count)
            .map(|k| Sentence {
                tokens: (0..k % 9 + 2).map(|i| 1 + (k * 7 + i) % (vocabulary - 1)).collect(),
                label: k % 2,
            })
            .collect(),
    )
}

#[derive(Module, Debug)]
pub struct Reader {
    embedding: Embedding,
    out: Linear,
}

impl Reader {
    pub fn new(vocabulary: usize, width: usize, device: &Device) -> Self {
        Self {
            embedding: EmbeddingConfig::new(vocabulary, width).init(device),
            out: LinearConfig::new(width, 2).init(device),
        }
    }

    pub fn forward(&self, batch: SentenceBatch) -> ClassificationOutput {
        let mask = batch.tokens_mask.float().unsqueeze_dim(2);
        let embedded = self.embedding.forward(batch.tokens) * mask.clone();
        let pooled = embedded.sum_dim(1).squeeze_dim(1) / mask.sum_dim(1).squeeze_dim(1);
        let logits = self.out.forward(pooled);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.label.clone());
        ClassificationOutput::new(loss, logits, batch.label)
    }
}

/// Counts optimizer steps.
#[derive(Default)]
pub struct Steps(usize);

impl Callback for Steps {
    fn step_end(&mut self, _step: &StepEnd) -> Control {
        self.0 += 1;
        Control::Continue
    }
}

training! {
    name: Sentiment,
    hparams: {
        /// Tokens known to the embedding.
        vocabulary: usize = 50,
        /// Width of an embedded token.
        width: usize = 16,
    },
    model: Reader = Reader::new(config.vocabulary, config.width, device),
    step: |model, batch: SentenceBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: sentences(300, config.vocabulary),
        valid: sentences(60, config.vocabulary),
        batcher: SentenceBatcher,
        batch_size: 20,
        workers: 2,
    },
    optimizer: adam(lr = 5e-3, beta1 = 0.9),
    epochs: 15,
    metrics: [train.loss, train.accuracy, valid.loss, valid.accuracy, valid.perplexity],
    callbacks: [Steps::default()],
    grad_accumulation: 2,
    checkpoint: keep_last(1),
    sweep: { width: [8, 16], batch_size: [10, 20] },
}

fn main() -> std::process::ExitCode {
    Sentiment::cli()
}
