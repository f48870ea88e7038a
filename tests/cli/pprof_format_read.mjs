// SPDX-License-Identifier: Apache-2.0
// pprof_format_read.mjs MODULE_DIR FILE.pb.gz
//
// A second reader of `cudasnap export --format pprof` files besides `go tool pprof`: the npm
// package pprof-format (what Datadog's and Pyroscope's Node.js tooling decode profiles with).
// Prints the sample types ("type/unit" in order), the default sample type, and the sum of each
// sample type's values, one line each, for export_test.sh to compare with the snapshot. Any decode
// error, a location or function id that names nothing, or a string index out of the table exits 1.
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { createRequire } from "node:module";
import { resolve } from "node:path";

const [moduleDir, file] = process.argv.slice(2);
const require = createRequire(resolve(moduleDir) + "/");
const { Profile } = require("pprof-format");

const fail = (msg) => {
  console.error(`pprof-format: ${file}: ${msg}`);
  process.exit(1);
};

const profile = Profile.decode(gunzipSync(readFileSync(file)));
const strings = profile.stringTable.strings;
const str = (i) => {
  const n = Number(i);
  if (!Number.isInteger(n) || n < 0 || n >= strings.length) fail(`string index ${i} out of the table`);
  return strings[n];
};
const locations = new Set(profile.location.map((l) => Number(l.id)));
const functions = new Set(profile.function.map((f) => Number(f.id)));
for (const l of profile.location)
  for (const line of l.line) if (!functions.has(Number(line.functionId))) fail(`location ${l.id} names function ${line.functionId}`);
for (const f of profile.function) str(f.name), str(f.filename);

const totals = profile.sampleType.map(() => 0n);
for (const s of profile.sample) {
  for (const id of s.locationId) if (!locations.has(Number(id))) fail(`a sample names location ${id}`);
  for (const l of s.label) str(l.key);
  s.value.forEach((v, i) => (totals[i] += BigInt(v)));
}
console.log("types " + profile.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`).join(" "));
console.log("default " + str(profile.defaultSampleType));
console.log("totals " + totals.join(" "));
