//! What the TensorFlow tests share (tests/tensorflow locally, tests/pods in pods): a small
//! synthetic `mnist.npz` written without Python, and what Keras printed, read back.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

/// Writes `mnist.npz` as `np.load` reads it (keys `x_train`, `y_train`, `x_test`,
/// `y_test`; uint8 images of 28×28, uint8 labels): `train` and `test` samples of a task a
/// small CNN learns in a few steps. An image of digit `d` is noise (0–59) with a bright bar
/// on rows `2d..2d+6`; the labels cycle through the ten digits in a scrambled order.
pub fn write_synthetic_mnist(path: &Path, train: usize, test: usize) {
    let mut seed: u32 = 0x2545_f491;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let mut make = |n: usize| {
        let labels: Vec<u8> = (0..n).map(|_| (next() % 10) as u8).collect();
        let mut images = Vec::with_capacity(n * 28 * 28);
        for &digit in &labels {
            for row in 0..28usize {
                for col in 0..28usize {
                    let bar = (2 * digit as usize..2 * digit as usize + 6).contains(&row)
                        && (4..24).contains(&col);
                    images.push(if bar { 255 } else { (next() % 60) as u8 });
                }
            }
        }
        (images, labels)
    };
    let (x_train, y_train) = make(train);
    let (x_test, y_test) = make(test);
    let files = [
        ("x_train.npy", npy_u8(&x_train, &[train, 28, 28])),
        ("y_train.npy", npy_u8(&y_train, &[train])),
        ("x_test.npy", npy_u8(&x_test, &[test, 28, 28])),
        ("y_test.npy", npy_u8(&y_test, &[test])),
    ];
    std::fs::write(path, zip_stored(&files)).expect("write mnist.npz");
}

/// A `.npy` (format 1.0) of uint8 values with this shape.
fn npy_u8(data: &[u8], shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '|u1', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + header, padded to a multiple of 64, ending in \n.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A zip archive of these files, stored (not compressed), as `np.savez` writes them.
fn zip_stored(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in files {
        let offset = out.len() as u32;
        let crc = crc32(data);
        // Version 2.0, no flags, stored, 1980-01-01 00:00, CRC, sizes, name, no extra field.
        let common = |buf: &mut Vec<u8>| {
            for v in [20u16, 0, 0, 0, 0x21] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            for v in [crc, data.len() as u32, data.len() as u32] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            buf.extend_from_slice(&(name.len() as u16).to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes());
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);

        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // made by
        common(&mut central);
        for v in [0u16, 0, 0] {
            central.extend_from_slice(&v.to_le_bytes()); // comment, disk, internal attributes
        }
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let (central_offset, count) = (out.len() as u32, files.len() as u16);
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    for v in [0u16, 0, count, count] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&central_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// The lines task `task` printed, from `task | line` output (`--local`, `tf-spawner logs`).
pub fn task_lines<'a>(stdout: &'a str, task: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter_map(|line| line.split_once(" | "))
        .filter(|(prefix, _)| prefix.trim() == task)
        .map(|(_, text)| text)
        .collect()
}

/// The metrics of each epoch Keras printed with `verbose=2`, e.g.
/// `4/4 - 2s - loss: 2.1674 - accuracy: 0.3223 - 2s/epoch - 603ms/step` →
/// `{"loss": 2.1674, "accuracy": 0.3223}`.
pub fn epochs(lines: &[&str]) -> Vec<BTreeMap<String, f64>> {
    lines
        .iter()
        .filter(|line| line.contains(" - loss: "))
        .map(|line| {
            line.split(" - ")
                .filter_map(|part| part.split_once(": "))
                .filter_map(|(name, value)| Some((name.to_string(), value.trim().parse().ok()?)))
                .collect()
        })
        .collect()
}

/// The value of `metric` in every epoch, panicking (with the lines) if one lacks it.
pub fn series(epochs: &[BTreeMap<String, f64>], metric: &str, lines: &[&str]) -> Vec<f64> {
    epochs
        .iter()
        .map(|e| {
            *e.get(metric)
                .unwrap_or_else(|| panic!("an epoch without {metric}: {lines:#?}"))
        })
        .collect()
}

/// Whether `path` is a Keras `.keras` file: a zip holding the model's config and weights.
pub fn is_keras_file(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    bytes.starts_with(b"PK\x03\x04") && has(b"config.json") && has(b"model.weights.h5")
}
