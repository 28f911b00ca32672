"""A pure-Python reader of TensorBoard event files (no tensorflow/tensorboard dependency).

An event file is a sequence of TFRecords, each framed as

  uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

(little endian), with masked_crc(x) = ((crc >> 15 | crc << 17) + 0xa282ead8) mod 2^32 over the
CRC-32C (Castagnoli) checksum. Each `data` is a protobuf `Event`; we decode only the fields a
scalar plot needs:

  Event    { double wall_time = 1; int64 step = 2; Summary summary = 5; }
  Summary  { repeated Value value = 1; }
  Value    { string tag = 1; float simple_value = 2; TensorProto tensor = 8; }
  Tensor   { DataType dtype = 1; bytes tensor_content = 4; repeated float float_val = 5;
             repeated double double_val = 6; repeated int32 int_val = 7;
             repeated int64 int64_val = 10; }

A scalar written by torch's SummaryWriter is a `simple_value`; TF2 writes a rank-0 `tensor`.
Images, histograms, text and non-scalar tensors are skipped.
"""

from __future__ import annotations

import struct

_CRC32C_POLY = 0x82F63B78  # reversed Castagnoli polynomial
_MASK_DELTA = 0xA282EAD8  # TFRecord's CRC mask constant


def _make_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def looks_like_tfrecord(head: bytes) -> bool:
    """True when the first 12 bytes are a valid TFRecord length header."""
    if len(head) < 12:
        return False
    (stored,) = struct.unpack("<I", head[8:12])
    return masked_crc(head[:8]) == stored


class DecodeError(Exception):
    """Malformed protobuf or record framing (internal; readers turn it into a warning)."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise DecodeError("bad varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes):
    """Yield (field_number, wire_type, value) of one protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise DecodeError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise DecodeError("field runs past the end of the message")
        yield number, wire, value


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# TensorFlow DataType -> struct format of one element, for the numeric scalar types.
_DTYPES = {1: "<f", 2: "<d", 3: "<i", 9: "<q", 19: "<e"}


def _tensor_scalar(buf: bytes) -> float | None:
    dtype, values, content = 0, [], b""
    for number, wire, value in _fields(buf):
        if number == 1 and wire == 0:
            dtype = value
        elif number == 4 and wire == 2:
            content = value
        elif number in (5, 6) and wire == 2:  # packed float / double
            fmt = "<f" if number == 5 else "<d"
            size = struct.calcsize(fmt)
            values += [v for (v,) in struct.iter_unpack(fmt, value[: len(value) // size * size])]
        elif number == 5 and wire == 5:
            values.append(struct.unpack("<f", value)[0])
        elif number == 6 and wire == 1:
            values.append(struct.unpack("<d", value)[0])
        elif number in (7, 10, 13) and wire == 0:
            values.append(float(_signed64(value)))
        elif number in (7, 10, 13) and wire == 2:  # packed ints
            pos = 0
            while pos < len(value):
                item, pos = _varint(value, pos)
                values.append(float(_signed64(item)))
    if not values and content and dtype in _DTYPES:
        fmt = _DTYPES[dtype]
        if len(content) == struct.calcsize(fmt):
            values = [float(struct.unpack(fmt, content)[0])]
    return values[0] if len(values) == 1 else None


def _summary_scalars(buf: bytes) -> list[tuple[str, float]]:
    scalars = []
    for number, wire, value_msg in _fields(buf):
        if number != 1 or wire != 2:
            continue
        tag, scalar = None, None
        for field, kind, value in _fields(value_msg):
            if field == 1 and kind == 2:
                tag = value.decode("utf-8", errors="replace")
            elif field == 2 and kind == 5:
                scalar = struct.unpack("<f", value)[0]
            elif field == 8 and kind == 2:
                scalar = _tensor_scalar(value)
        if tag is not None and scalar is not None:
            scalars.append((tag, float(scalar)))
    return scalars


def read_events(data: bytes) -> tuple[list[tuple[int, str, float]], list[str]]:
    """(step, tag, value) of every scalar in an event file, and warnings for skipped records.

    Reading stops at a truncated or corrupt record (a run killed mid-write leaves one).
    """
    scalars: list[tuple[int, str, float]] = []
    warnings: list[str] = []
    pos, n_bad = 0, 0
    while pos < len(data):
        header = data[pos : pos + 12]
        if len(header) < 12 or not looks_like_tfrecord(header):
            warnings.append(
                f"the event file is truncated or corrupt at byte {pos}; read up to there"
            )
            break
        (length,) = struct.unpack("<Q", header[:8])
        body = data[pos + 12 : pos + 12 + length]
        footer = data[pos + 12 + length : pos + 16 + length]
        if len(body) < length or len(footer) < 4:
            warnings.append(f"the last record (at byte {pos}) is truncated and was skipped")
            break
        pos += 16 + length
        if struct.unpack("<I", footer)[0] != masked_crc(body):
            n_bad += 1
            continue
        try:
            step, summary = 0, None
            for number, wire, value in _fields(body):
                if number == 2 and wire == 0:
                    step = _signed64(value)
                elif number == 5 and wire == 2:
                    summary = value
            if summary is not None:
                scalars += [(step, tag, v) for tag, v in _summary_scalars(summary)]
        except (DecodeError, struct.error):
            n_bad += 1
    if n_bad:
        warnings.append(f"{n_bad} corrupt record(s) in the event file were skipped")
    return scalars, warnings
