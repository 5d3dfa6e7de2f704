//! Integer fields of `#[derive(Batch)]` samples (class indices, token ids), checked against the
//! range of the device's integer tensors before Burn converts them: Burn's conversion panics
//! deep inside its casts ("Element cannot be represented in the target type: i64 => i32")
//! without naming the field. A `Batcher` cannot return an error, so this one stops the same
//! way, but says which field, which value, and what to do.

use burn::tensor::{Device, IntDType};

/// `values` of field `field`, unchanged, after checking each fits `device`'s integer tensors.
///
/// # Panics
/// When a value does not fit, naming the field and the value.
pub fn checked_ints(field: &str, values: Vec<i64>, device: &Device) -> Vec<i64> {
    let dtype = device.settings().int_dtype;
    let (min, max) = range(dtype);
    if let Some(value) = values.iter().find(|v| !(min..=max).contains(*v)) {
        panic!(
            "`#[derive(Batch)]` field `{field}` holds {value}, which this device's integer tensors ({dtype:?}) cannot hold ({min} to {max}): map such ids to smaller ones (an index into your vocabulary) before batching"
        );
    }
    values
}

fn range(dtype: IntDType) -> (i64, i64) {
    match dtype {
        IntDType::I64 | IntDType::U64 => (i64::MIN, i64::MAX),
        IntDType::I32 => (i32::MIN.into(), i32::MAX.into()),
        IntDType::I16 => (i16::MIN.into(), i16::MAX.into()),
        IntDType::I8 => (i8::MIN.into(), i8::MAX.into()),
        IntDType::U32 => (0, u32::MAX.into()),
        IntDType::U16 => (0, u16::MAX.into()),
        IntDType::U8 => (0, u8::MAX.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_range_pass_and_others_are_named() {
        let device = Device::flex();
        assert_eq!(checked_ints("ids", vec![1, 7], &device), [1, 7]);
        let big = 3_000_000_000_i64;
        let (min, max) = range(device.settings().int_dtype);
        if !(min..=max).contains(&big) {
            let caught = std::panic::catch_unwind(|| checked_ints("ids", vec![1, big], &device));
            let message = caught.unwrap_err();
            let message = message.downcast_ref::<String>().unwrap();
            assert!(
                message.contains("field `ids` holds 3000000000"),
                "{message}"
            );
        }
    }
}
