//! The bytes one rank sends another for a group of batches, and the tensor lists the ranks
//! share after it (new parameter values, squared gradient norms).
//!
//! Written by hand because the exchange is the only format: a few tensors of known order, read
//! back by the same binary, where a general serializer would copy every value once more.

use burn::tensor::{Bytes, DType, TensorData};

/// A tensor's values as a message carries them, borrowed: a whole tensor, or the bytes of a
/// range of one with the shape it travels in. Encoded straight from the tensor's data, so a
/// range is copied once, into the message.
pub(crate) struct View<'a> {
    pub dtype: DType,
    pub dims: Vec<usize>,
    pub bytes: &'a [u8],
}

impl<'a> From<&'a TensorData> for View<'a> {
    fn from(data: &'a TensorData) -> Self {
        Self {
            dtype: data.dtype(),
            dims: data.shape().to_vec(),
            bytes: data.as_bytes(),
        }
    }
}

/// What one rank sends another for an optimizer step.
#[derive(Debug, PartialEq)]
pub(crate) struct Share {
    /// Ctrl-C or SIGTERM arrived on the sender.
    pub interrupted: bool,
    /// The sender's gradient of each parameter the receiver owns, in the model's visiting
    /// order; empty from a rank without a batch in the group.
    pub grads: Vec<Option<TensorData>>,
    /// The sender's step output's tensors; empty without a batch.
    pub item: Vec<TensorData>,
}

impl Share {
    /// The bytes of a share, appended to `out` (one buffer holds the shares for every rank):
    /// encoded from borrowed parts, since one rank sends its step output to every other.
    pub fn encode(
        interrupted: bool,
        grads: &[Option<View<'_>>],
        item: &[TensorData],
        out: &mut Vec<u8>,
    ) {
        out.push(u8::from(interrupted));
        put_optional(out, grads.iter().map(Option::as_ref));
        put_len(out, item.len());
        for part in item {
            put_tensor(out, &part.into());
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut input = Reader(bytes);
        let interrupted = input.byte()? != 0;
        let grads = input.optional()?;
        let item = (0..input.len()?)
            .map(|_| input.tensor())
            .collect::<Result<_, String>>()?;
        input.end()?;
        Ok(Self {
            interrupted,
            grads,
            item,
        })
    }
}

/// A list of tensors, some absent: its bytes, written over `out`.
pub(crate) fn encode_tensors(tensors: &[Option<TensorData>], out: &mut Vec<u8>) {
    out.clear();
    let views: Vec<Option<View<'_>>> = tensors.iter().map(|t| t.as_ref().map(View::from)).collect();
    put_optional(out, views.iter().map(Option::as_ref));
}

/// The list [`encode_tensors`] wrote.
pub(crate) fn decode_tensors(bytes: &[u8]) -> Result<Vec<Option<TensorData>>, String> {
    let mut input = Reader(bytes);
    let tensors = input.optional()?;
    input.end()?;
    Ok(tensors)
}

fn put_optional<'a, 'b: 'a>(
    out: &mut Vec<u8>,
    tensors: impl ExactSizeIterator<Item = Option<&'a View<'b>>>,
) {
    put_len(out, tensors.len());
    for tensor in tensors {
        match tensor {
            Some(tensor) => {
                out.push(1);
                put_tensor(out, tensor);
            }
            None => out.push(0),
        }
    }
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&(len as u64).to_le_bytes());
}

fn put_tensor(out: &mut Vec<u8>, view: &View<'_>) {
    let head =
        serde_json::to_vec(&(view.dtype, &view.dims)).expect("a dtype and dimensions serialize");
    put_len(out, head.len());
    out.extend_from_slice(&head);
    put_len(out, view.bytes.len());
    out.extend_from_slice(view.bytes);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!(
                "cut short ({} bytes left, {n} needed)",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn end(&self) -> Result<(), String> {
        match self.0.len() {
            0 => Ok(()),
            n => Err(format!("{n} bytes after the end")),
        }
    }

    fn optional(&mut self) -> Result<Vec<Option<TensorData>>, String> {
        (0..self.len()?)
            .map(|_| match self.byte()? {
                0 => Ok(None),
                _ => self.tensor().map(Some),
            })
            .collect()
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn len(&mut self) -> Result<usize, String> {
        let bytes = self.take(8)?.try_into().expect("8 bytes");
        usize::try_from(u64::from_le_bytes(bytes)).map_err(|e| e.to_string())
    }

    fn tensor(&mut self) -> Result<TensorData, String> {
        let head = self.len()?;
        let (dtype, shape): (DType, Vec<usize>) =
            serde_json::from_slice(self.take(head)?).map_err(|e| e.to_string())?;
        let len = self.len()?;
        let expected = shape.iter().product::<usize>() * dtype.size();
        if len != expected {
            return Err(format!(
                "a tensor of {shape:?} {dtype:?} with {len} bytes instead of {expected}"
            ));
        }
        // Copied once, into memory aligned as Burn's backends want it: a `Vec<u8>` would be
        // copied a second time to align it (`TensorData::from_bytes_vec`).
        let mut bytes = Bytes::from_elems(Vec::<u8>::new());
        bytes.extend_from_byte_slice(self.take(len)?);
        Ok(TensorData::from_bytes(bytes, shape, dtype))
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;

    use super::{Share, View, decode_tensors, encode_tensors};

    #[test]
    fn a_share_reads_back_as_written_and_damage_is_an_error() {
        let share = Share {
            interrupted: true,
            grads: vec![
                Some(TensorData::new(vec![1.5f32, -0.0, f32::MIN_POSITIVE], [3])),
                None,
                Some(TensorData::new(vec![7.0f32; 4], [2, 2])),
            ],
            item: vec![TensorData::new(vec![3i64, 1], [2])],
        };
        let mut bytes = Vec::new();
        let views: Vec<_> = share
            .grads
            .iter()
            .map(|g| g.as_ref().map(View::from))
            .collect();
        Share::encode(share.interrupted, &views, &share.item, &mut bytes);
        assert_eq!(Share::decode(&bytes).unwrap(), share);
        // A range of a tensor travels as its own tensor, from the whole one's bytes.
        let whole = TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]);
        let range = View {
            dtype: whole.dtype(),
            dims: vec![1, 2],
            bytes: &whole.as_bytes()[8..16],
        };
        let mut one = Vec::new();
        Share::encode(false, &[Some(range)], &[], &mut one);
        let sent = Share::decode(&one).unwrap().grads.remove(0).unwrap();
        assert_eq!(sent, TensorData::new(vec![3.0f32, 4.0], [1, 2]));
        for cut in [0, 1, 9, bytes.len() / 2, bytes.len() - 1] {
            assert!(Share::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Share::decode(&longer).unwrap_err(), "1 bytes after the end");
        let values = share.grads;
        encode_tensors(&values, &mut bytes);
        assert_eq!(decode_tensors(&bytes).unwrap(), values);
        assert!(decode_tensors(&bytes[..bytes.len() - 1]).is_err());
    }
}
