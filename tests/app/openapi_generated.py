"""Clients generated from the API document drive an investigation to a published entry.

Run by tests/app/openapi.rs against a server on a loopback port:
    python tests/app/openapi_generated.py BASE_URL TOKEN WORK_DIR
The document is read without a token from /api/openapi.json (which leads to
/api/v1/openapi.json). Two generators read it:
- openapi-python-client writes a client package; the investigation is opened, steps 1
  and 7 recorded (each through its own typed call), the journal entry drafted and
  published, all through that package's functions and models;
- datamodel-code-generator writes pydantic models; the same run is made again with
  bodies built from those models and every answer read back into them.
Exits non-zero with the reason on the first problem.
"""

import datetime
import importlib
import json
import os
import subprocess
import sys
import typing

import requests

PACKAGE = "perfjournal_generated_client"


def fail(message):
    sys.exit(message)


def tool(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def generate(cmd, what):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{what} failed on the document:\n{out.stdout}\n{out.stderr}")


def operation_module(operation_id):
    """The generated module of an operation (api/<tag>/<operation_id>.py)."""
    for tag in ("investigations", "journal"):
        try:
            return importlib.import_module(f"{PACKAGE}.api.{tag}.{operation_id}")
        except ModuleNotFoundError:
            continue
    fail(f"openapi-python-client wrote no module for {operation_id}")


def call(client, operation_id, body=None, **path):
    """Calls an operation through the generated code, the body built by its model."""
    module = operation_module(operation_id)
    kwargs = dict(path)
    if body is not None:
        model = typing.get_type_hints(module.sync_detailed)["body"]
        kwargs["body"] = model.from_dict(body)
        # The typed model must keep every field it was given (none dropped beside an
        # anyOf, as title, date and publish once were).
        sent = kwargs["body"].to_dict()
        lost = set(body) - set(sent)
        if lost:
            fail(f"{operation_id}: the generated {model.__name__} dropped {sorted(lost)}")
    res = module.sync_detailed(client=client, **kwargs)
    if res.status_code // 100 != 2:
        fail(f"{operation_id} answered {res.status_code}: {res.content[:400]!r}")
    return res


STEP1 = {"metric": "ttft", "percentile": "p95", "observed": 3200, "target": 800, "unit": "ms"}
STEP7 = {
    "change": "chunked prefill",
    "after_value": 780,
    "quality": "200 paired generations identical",
}


def entry_body(version):
    return {
        "title": "TTFT p95 back under 800 ms with chunked prefill",
        "date": datetime.date.today().isoformat(),
        "symptom": "p95 TTFT 3.2 s at peak",
        "diagnosis": "long prompts blocked decode batches",
        "change": "chunked prefill",
        "result": "p95 TTFT 780 ms",
        "publish": True,
        "version": version,
    }


def check_published(base, token, entry_id):
    got = requests.get(
        f"{base}/api/v1/journal/{entry_id}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()
    if not got.get("published") or got.get("title") != entry_body(0)["title"]:
        fail(f"entry {entry_id} is not the published entry sent: {json.dumps(got)[:400]}")
    return got


def with_generated_client(base, token, work, doc_path):
    target = os.path.join(work, PACKAGE)
    generate(
        [tool("openapi-python-client"), "generate", "--path", doc_path, "--output-path",
         target, "--meta", "none", "--overwrite"],
        "openapi-python-client",
    )
    sys.path.insert(0, work)
    client_module = importlib.import_module(PACKAGE)
    client = client_module.AuthenticatedClient(base_url=f"{base}/api/v1", token=token)
    created = call(client, "create_investigation", {"title": "TTFT up at peak (generated client)"})
    inv = created.parsed.id
    call(client, "put_step_1", STEP1, id=inv)
    call(client, "put_step_7", STEP7, id=inv)
    detail = call(client, "get_investigation", id=inv).parsed
    if sorted(detail.steps_recorded) != [1, 7]:
        fail(f"steps recorded: {detail.steps_recorded}")
    entry = call(client, "draft_journal_entry", id=inv).parsed.id
    version = call(client, "get_entry", id=entry).parsed.version
    call(client, "put_entry", entry_body(version), id=entry)
    got = check_published(base, token, entry)
    if got.get("investigation", {}).get("id") != inv:
        fail(f"entry {entry} does not name investigation {inv}")
    print(f"openapi-python-client: investigation {inv} -> published entry {entry}")


def with_generated_models(base, token, work, doc_path):
    models_path = os.path.join(work, "perfjournal_models.py")
    generate(
        [tool("datamodel-codegen"), "--input", doc_path, "--input-file-type", "openapi",
         "--output", models_path, "--output-model-type", "pydantic_v2.BaseModel",
         "--target-python-version", "3.10"],
        "datamodel-code-generator",
    )
    sys.path.insert(0, work)
    m = importlib.import_module("perfjournal_models")
    api = f"{base}/api/v1"
    auth = {"Authorization": f"Bearer {token}"}

    def send(method, path, model=None, answer=None, **fields):
        body = None
        if model is not None:
            built = model.model_validate(fields)
            body = built.model_dump(mode="json", exclude_none=True, by_alias=True)
            lost = set(fields) - set(body)
            if lost:
                fail(f"{method} {path}: the generated {model.__name__} dropped {sorted(lost)}")
        res = requests.request(method, api + path, json=body, headers=auth, timeout=30)
        if res.status_code // 100 != 2:
            fail(f"{method} {path} answered {res.status_code}: {res.text[:400]}")
        return answer.model_validate(res.json()) if answer is not None else res.json()

    inv = send("POST", "/investigations", m.NewInvestigation, m.Created,
               title="TTFT up at peak (generated models)").id
    send("PUT", f"/investigations/{inv}/steps/1", m.Step1Body, m.StepJson, **STEP1)
    send("PUT", f"/investigations/{inv}/steps/7", m.Step7Body, m.StepJson, **STEP7)
    detail = send("GET", f"/investigations/{inv}", answer=m.InvestigationDetail)
    if sorted(detail.steps_recorded) != [1, 7]:
        fail(f"steps recorded: {detail.steps_recorded}")
    entry = send("POST", f"/investigations/{inv}/journal", answer=m.EntryLink).id
    version = send("GET", f"/journal/{entry}", answer=m.EntryDetail).version
    send("PUT", f"/journal/{entry}", m.JournalEntryEdit, **entry_body(version))
    check_published(base, token, entry)
    print(f"datamodel-code-generator: investigation {inv} -> published entry {entry}")


def main():
    base, token, work = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    res = requests.get(f"{base}/api/openapi.json", timeout=30)
    if res.status_code != 200 or not res.history:
        fail(f"/api/openapi.json without a token: {res.status_code}, redirects {res.history}")
    doc = res.json()
    doc_path = os.path.join(work, "openapi.json")
    with open(doc_path, "w") as f:
        json.dump(doc, f)
    print(f"document read without a token: OpenAPI {doc['openapi']}, {len(doc['paths'])} paths")
    with_generated_client(base, token, work, doc_path)
    with_generated_models(base, token, work, doc_path)
    print("generated clients ok")


if __name__ == "__main__":
    main()
