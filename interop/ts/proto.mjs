#!/usr/bin/env node
// interop/ts/proto.mjs — the OFFICIAL binary-binding codec, @ag-ui/proto 1.0.0 and
// @ag-ui/encoder 1.0.0 (pinned in ../package.json), for the byte-for-byte checks
// (tests/interop/test_proto.py), the corpus regeneration and `make bench`.
//
// usage:
//   node interop/ts/proto.mjs codec FILE
//     FILE: {"encode": [event…], "decode": [hex…], "frame": [[event…]…]}
//     prints {"encoded": [{hex}|{error}], "decoded": [{event}|{unknown: true}|{error}],
//             "framed": [hex…], "warnings": [text…]}
//       encode — proto.encode(event), the bytes of one message
//       decode — proto.decode(bytes) (an AGUIUnknownEventTypeError is {unknown: true})
//       frame  — a whole body as EventEncoder({accept: the media type}).encodeBinary
//                writes it: 4-byte big-endian length + message, per event
//   node interop/ts/proto.mjs bench FILE REPEAT   (or FILE bench REPEAT)
//     FILE: a JSON array of events; encodes and decodes the whole array REPEAT times
//     prints {"events", "bytes", "encode_s", "decode_s"} (best of the repetitions)
import fs from "node:fs";
import { performance } from "node:perf_hooks";
import { encode, decode, AGUIUnknownEventTypeError, AGUI_MEDIA_TYPE } from "@ag-ui/proto";
import { EventEncoder } from "@ag-ui/encoder";
import { captureConsole, print, usage } from "./lib.mjs";

// the mode comes first (tests/interop/node.py) or after the file (bench/peers.py)
const argv = process.argv.slice(2);
if (!["codec", "bench"].includes(argv[0])) [argv[0], argv[1]] = [argv[1], argv[0]];
const [mode, file, repeat] = argv;
if (!mode || !file) usage("usage: node proto.mjs codec FILE | bench FILE REPEAT");
const request = JSON.parse(fs.readFileSync(file, "utf8"));

const hex = (bytes) => Buffer.from(bytes).toString("hex");

if (mode === "codec") {
  const cap = captureConsole();
  const encoded = (request.encode ?? []).map((event) => {
    try {
      return { hex: hex(encode(event)) };
    } catch (err) {
      return { error: String(err) };
    }
  });
  const decoded = (request.decode ?? []).map((text) => {
    try {
      return { event: decode(new Uint8Array(Buffer.from(text, "hex"))) };
    } catch (err) {
      return err instanceof AGUIUnknownEventTypeError ? { unknown: true } : { error: String(err) };
    }
  });
  const encoder = new EventEncoder({ accept: AGUI_MEDIA_TYPE });
  const framed = (request.frame ?? []).map((events) =>
    hex(Buffer.concat(events.map((event) => encoder.encodeBinary(event)))),
  );
  cap.restore();
  const warnings = cap.warnings;
  print({ encoded, decoded, framed, contentType: encoder.getContentType(), warnings });
} else if (mode === "bench") {
  const events = request;
  const n = Number(repeat ?? 5);
  const cap = captureConsole({ silent: true });
  const blobs = events.map((event) => encode(event));
  let encodeBest = Infinity;
  let decodeBest = Infinity;
  for (let i = 0; i < n; i++) {
    let t = performance.now();
    for (const event of events) encode(event);
    encodeBest = Math.min(encodeBest, performance.now() - t);
    t = performance.now();
    for (const blob of blobs) decode(blob);
    decodeBest = Math.min(decodeBest, performance.now() - t);
  }
  cap.restore();
  print({
    events: events.length,
    bytes: blobs.reduce((total, blob) => total + 4 + blob.length, 0),
    encode_s: encodeBest / 1000,
    decode_s: decodeBest / 1000,
  });
} else {
  usage(`unknown mode ${mode}`);
}
