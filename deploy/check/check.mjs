// Checks each object of a Kubernetes manifest against the Kubernetes API's schemas (the
// kubernetes-models package: types, enumerations, required fields and formats; like the
// schemas themselves, it lets unknown fields pass), and that the check rejects a wrong type.
import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';

async function validate(obj) {
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : [null, obj.apiVersion];
  const path = `kubernetes-models/${group ? `${group}/` : ''}${version}/${obj.kind}`;
  const { [obj.kind]: Model } = await import(path);
  new Model(obj).validate();
}

const file = process.argv[2];
const docs = parseAllDocuments(await readFile(file, 'utf8'));
let checked = 0;
for (const doc of docs) {
  if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`);
  const obj = doc.toJS();
  try {
    await validate(obj);
  } catch (e) {
    console.error(`${file}: ${obj.kind} ${obj.metadata?.name}: ${e.message}`);
    process.exit(1);
  }
  checked++;
  console.log(`ok ${obj.apiVersion} ${obj.kind} ${obj.metadata.name}`);
}
if (checked === 0) throw new Error(`${file}: no objects`);

// A port that is not a number must fail, or the checks above prove nothing.
const deployment = docs.map((d) => d.toJS()).find((o) => o.kind === 'Deployment');
deployment.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
let rejected = false;
try {
  await validate(deployment);
} catch {
  rejected = true;
}
if (!rejected) throw new Error('a wrong type was not rejected: the schemas are not applied');
console.log(`${checked} objects valid; a wrong type is rejected`);
