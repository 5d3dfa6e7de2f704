//! One optimizer step's exchange: each rank's gradients and step output to every rank, the
//! gradients added up in rank order, and the check that the ranks' weights stay equal.

use std::time::{Duration, Instant};

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};

use super::wire::Share;
use super::{Collective, ItemCodec, ParallelError};
use crate::erased::ModelRef;

/// What the ranks agreed on for one group of batches.
pub(crate) struct Exchanged<O> {
    /// The sum of the group's gradients, as one process accumulating them would have it.
    pub grads: GradientsParams,
    /// The group's step outputs in batch order.
    pub items: Vec<O>,
    /// Ctrl-C or SIGTERM reached some rank: every rank stops after this step.
    pub interrupted: bool,
}

/// The fit loop's side of data-parallel training.
pub(crate) struct Parallel<O> {
    pub group: &'static dyn Collective,
    codec: ItemCodec<O>,
    /// Where gradients and outputs from other ranks are rebuilt: the training device's inner
    /// (non-autodiff) device, where `backward` puts gradients.
    device: Device,
    pub traffic: Traffic,
    /// The send and receive buffers, kept between steps.
    buffers: (Vec<u8>, Vec<u8>),
}

/// What the run's summary says of the exchanges: time spent exchanging and training (steps,
/// exchanges and metrics), bytes this rank sent, optimizer steps, the last checksum of the
/// weights. Apart from [`Parallel`], which is compiled per step output type.
pub(crate) struct Traffic {
    ranks: usize,
    waited: Duration,
    pub trained: Duration,
    sent: usize,
    steps: usize,
    checksum: Option<u32>,
}

impl<O> Parallel<O> {
    pub fn new(group: &'static dyn Collective, codec: ItemCodec<O>, device: Device) -> Self {
        Self {
            group,
            codec,
            device,
            traffic: Traffic {
                ranks: group.size(),
                waited: Duration::ZERO,
                trained: Duration::ZERO,
                sent: 0,
                steps: 0,
                checksum: None,
            },
            buffers: (Vec::new(), Vec::new()),
        }
    }

    /// Sends this rank's batch results (`None` when the group has no batch for it) and receives
    /// everyone's, for a group of `batches` batches.
    pub fn exchange(
        &mut self,
        model: ModelRef<'_>,
        mine: Option<(GradientsParams, &O)>,
        batches: usize,
        interrupted: bool,
    ) -> Result<Exchanged<O>, ParallelError> {
        let rank = self.group.rank();
        let (own, share) = match mine {
            Some((grads, item)) => {
                let mut copied = CopyGrads {
                    grads: &grads,
                    copied: Vec::new(),
                };
                model.visit(&mut copied);
                let share = Share {
                    interrupted,
                    grads: copied.copied,
                    item: (self.codec.parts)(item),
                };
                (Some((grads, share.item.clone())), share)
            }
            None => (
                None,
                Share {
                    interrupted,
                    grads: Vec::new(),
                    item: Vec::new(),
                },
            ),
        };
        let (mut send, receive) = std::mem::take(&mut self.buffers);
        share.encode(&mut send);
        drop(share);
        let started = Instant::now();
        let gathered = self.group.all_gather(&send, receive);
        self.traffic.waited += started.elapsed();
        self.traffic.sent += send.len();
        self.traffic.steps += 1;
        // This rank's own gradients and output are used as they are; the others' are read back.
        let mut own = own;
        let mut sources = Vec::with_capacity(batches);
        let mut items = Vec::with_capacity(batches);
        let mut interrupted = interrupted;
        for other in 0..gathered.len() {
            if other == rank {
                if let Some((grads, item)) = own.take() {
                    sources.push(Grads::Own(grads));
                    items.push(self.item(other, item)?);
                }
                continue;
            }
            let wire = |message| ParallelError::Wire {
                rank: other,
                message,
            };
            let share = Share::decode(gathered.of(other)).map_err(wire)?;
            interrupted |= share.interrupted;
            if other < batches {
                sources.push(Grads::Sent(share.grads.into_iter()));
                items.push(self.item(other, share.item)?);
            }
        }
        self.buffers = (send, gathered.into_buffer());
        let mut sum = SumGrads {
            sources,
            device: &self.device,
            grads: GradientsParams::new(),
        };
        model.visit(&mut sum);
        Ok(Exchanged {
            grads: sum.grads,
            items,
            interrupted,
        })
    }

    /// Rank `rank`'s step output from its tensors.
    fn item(&self, rank: usize, parts: Vec<TensorData>) -> Result<O, ParallelError> {
        (self.codec.from_parts)(&mut parts.into_iter(), &self.device)
            .map_err(|message| ParallelError::Wire { rank, message })
    }

    /// Compares the ranks' weights after `epoch`.
    pub fn same_weights(&mut self, model: ModelRef<'_>, epoch: usize) -> Result<(), ParallelError> {
        let mut sum = Checksum(0);
        model.visit(&mut sum);
        let gathered = self.group.all_gather(&sum.0.to_le_bytes(), Vec::new());
        let checksums: Vec<u32> = (0..gathered.len())
            .map(|rank| u32::from_le_bytes(gathered.of(rank)[..4].try_into().expect("4 bytes")))
            .collect();
        if checksums.iter().any(|&c| c != sum.0) {
            return Err(ParallelError::Diverged { epoch, checksums });
        }
        self.traffic.checksum = Some(sum.0);
        Ok(())
    }
}

impl Traffic {
    /// The line the run's summary ends with: that the weights stayed equal, and what the
    /// exchanges cost.
    pub fn summary(&self) -> String {
        let per_step = self.sent / self.steps.max(1);
        let share = self.waited.as_secs_f64() / self.trained.as_secs_f64().max(f64::EPSILON);
        format!(
            "data parallel over {} ranks: weights equal on every rank at each epoch end{}; {} bytes sent per optimizer step by each rank, exchanges {:.1} % of training time",
            self.ranks,
            self.checksum
                .map_or_else(String::new, |c| format!(" (crc32c {c:08x})")),
            per_step,
            100.0 * share,
        )
    }
}

/// Copies each parameter's gradient, in visiting order.
struct CopyGrads<'a> {
    grads: &'a GradientsParams,
    copied: Vec<Option<TensorData>>,
}

impl ModuleVisitor for CopyGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let grad = self.grads.get::<D>(param.id);
        self.copied.push(grad.map(|g| g.into_data()));
    }
}

/// A rank's gradients: this rank's own, or another's as received.
enum Grads {
    Own(GradientsParams),
    Sent(std::vec::IntoIter<Option<TensorData>>),
}

/// Adds each parameter's gradients up in rank order, with the tensor additions of Burn's
/// `GradientsAccumulator` (`sum.add(next)`), so the sum has the one-process sum's bits.
struct SumGrads<'a> {
    sources: Vec<Grads>,
    device: &'a Device,
    grads: GradientsParams,
}

impl ModuleVisitor for SumGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let mut sum: Option<Tensor<D>> = None;
        for source in &mut self.sources {
            let grad = match source {
                Grads::Own(grads) => grads.remove::<D>(param.id),
                Grads::Sent(grads) => grads.next().flatten().map(|data| {
                    let dtype = data.dtype();
                    Tensor::<D>::from_data(data, (self.device, dtype))
                }),
            };
            let Some(grad) = grad else { continue };
            sum = Some(match sum {
                Some(sum) => sum.add(grad),
                None => grad,
            });
        }
        if let Some(sum) = sum {
            self.grads.register(param.id, sum);
        }
    }
}

/// CRC-32C of every float parameter's bytes, in visiting order.
struct Checksum(u32);

impl ModuleVisitor for Checksum {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0 = crc32c::crc32c_append(self.0, param.val().into_data().as_bytes());
    }
}
