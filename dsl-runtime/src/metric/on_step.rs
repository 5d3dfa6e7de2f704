//! A metric of one step's output in a several-optimizer experiment (`train.critic.loss`).

use burn::tensor::TensorReadError;
use burn::train::metric::MetricMetadata;

use super::{RestoreError, SplitMetric};

/// The metric `inner` of the step `step`, reported as `step.key` (`critic.loss`). The run's
/// output `P` holds each step's output `O` where that step ran (`project`); a batch the step
/// skipped feeds nothing.
pub struct OnStep<O, P> {
    key: String,
    project: fn(&P) -> Option<&O>,
    inner: Box<dyn SplitMetric<O>>,
}

impl<O: 'static, P: 'static> OnStep<O, P> {
    /// `inner` on the output of step `step`.
    pub fn boxed(
        step: &str,
        project: fn(&P) -> Option<&O>,
        inner: Box<dyn SplitMetric<O>>,
    ) -> Box<dyn SplitMetric<P>> {
        Box::new(Self {
            key: format!("{step}.{}", inner.key()),
            project,
            inner,
        })
    }
}

impl<O, P> SplitMetric<P> for OnStep<O, P> {
    fn key(&self) -> &str {
        &self.key
    }

    fn higher_is_better(&self) -> bool {
        self.inner.higher_is_better()
    }

    fn update(
        &mut self,
        item: &P,
        metadata: &MetricMetadata,
    ) -> Result<Option<f64>, TensorReadError> {
        match (self.project)(item) {
            Some(output) => self.inner.update(output, metadata),
            None => Ok(None),
        }
    }

    fn finish_epoch(&mut self) -> Result<f64, TensorReadError> {
        self.inner.finish_epoch()
    }

    fn carry(&self) -> Option<serde_json::Value> {
        self.inner.carry()
    }

    fn restore(&mut self, carried: &serde_json::Value) -> Result<(), RestoreError> {
        self.inner.restore(carried)
    }

    fn defer(&mut self, every: usize) {
        self.inner.defer(every);
    }

    fn deferred(&self) -> usize {
        self.inner.deferred()
    }

    fn take_deferred(&mut self) -> Result<Vec<f64>, TensorReadError> {
        self.inner.take_deferred()
    }
}
