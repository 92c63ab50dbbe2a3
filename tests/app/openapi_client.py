"""A client that knows the perfjournal API only from its OpenAPI document.

Run by tests/openapi.rs against a server on a loopback port:
    python tests/app/openapi_client.py BASE_URL TOKEN
It validates the document (openapi-spec-validator), then uploads a file and reads it back
the way a generated client would: the address from `servers` and the path template, the
query parameters and body encoding from the operation, every response checked against the
document (openapi-core). Exits non-zero with the reason on the first problem.
"""

import json
import sys
import urllib.parse

import requests
from openapi_core import OpenAPI
from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator


def operation(doc, operation_id):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and op.get("operationId") == operation_id:
                return path, method, op
    sys.exit(f"no operation {operation_id} in the document")


def main():
    base, token = sys.argv[1].rstrip("/"), sys.argv[2]
    auth = {"Authorization": f"Bearer {token}"}
    doc = requests.get(f"{base}/api/v1/openapi.json", headers=auth, timeout=30).json()

    validator = (OpenAPIV31SpecValidator if doc["openapi"].startswith("3.1") else OpenAPIV30SpecValidator)(doc)
    errors = list(validator.iter_errors())
    for e in errors:
        print(f"invalid document: {e.message} at {list(e.path)}", file=sys.stderr)
    if errors:
        sys.exit(f"{len(errors)} validation errors in openapi.json")
    print(f"document valid: OpenAPI {doc['openapi']}, {len(doc['paths'])} paths")

    servers = doc.get("servers") or []
    if not servers:
        sys.exit("no servers entry: a client would resolve paths against /")
    root = urllib.parse.urljoin(base + "/", servers[0]["url"].lstrip("/"))
    spec = OpenAPI.from_dict(doc)

    def call(operation_id, path_params=None, query=None, body=None):
        path, method, op = operation(doc, operation_id)
        url = root.rstrip("/") + path.format(**(path_params or {}))
        headers = dict(auth)
        declared = {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
        for name in query or {}:
            if name not in declared:
                sys.exit(f"{operation_id}: query parameter {name} is not declared in the document")
        if body is not None:
            content = list(op["requestBody"]["content"])
            if "application/octet-stream" not in content:
                sys.exit(f"{operation_id}: the document declares no binary body ({content})")
            schema = op["requestBody"]["content"]["application/octet-stream"].get("schema", {})
            if schema.get("type") != "string":
                sys.exit(f"{operation_id}: a binary body must be a string schema, got {schema}")
            headers["Content-Type"] = "application/octet-stream"
        req = requests.Request(method.upper(), url, params=query, data=body, headers=headers)
        prepared = req.prepare()
        with requests.Session() as s:
            res = s.send(prepared, timeout=60)
        if str(res.status_code) not in op["responses"]:
            sys.exit(f"{operation_id}: status {res.status_code} is not documented: {res.text[:300]}")
        spec.validate_response(RequestsOpenAPIRequest(req), RequestsOpenAPIResponse(res))
        return res

    lines = [
        json.dumps({"request_id": f"r{i}", "queue_wait_ms": 10 + i, "prefill_ms": 50, "decode_ms": 400,
                    "ttft_ms": 70 + i, "e2e_ms": 480 + i, "prompt_tokens": 512, "output_tokens": 128})
        for i in range(20)
    ]
    body = ("\n".join(lines) + "\n").encode()
    created = call("upload_artifact", query={"name": "client.jsonl"}, body=body)
    if created.status_code != 201:
        sys.exit(f"upload answered {created.status_code}: {created.text[:300]}")
    artifact = created.json()
    print(f"uploaded through the document: artifact {artifact['id']} ({artifact['kind']})")
    got = call("get_artifact", path_params={"id": artifact["id"]})
    if got.status_code != 200:
        sys.exit(f"reading it back answered {got.status_code}")
    missing = call("get_artifact", path_params={"id": 987654321})
    if missing.status_code != 404:
        sys.exit(f"a missing artifact answered {missing.status_code}")
    unauthenticated = requests.get(root.rstrip("/") + "/me", timeout=30)
    if unauthenticated.status_code != 401 or "401" not in doc["paths"]["/me"]["get"]["responses"]:
        sys.exit("401 without a token must be answered and documented")
    print("client round trip ok: upload 201, read 200, missing 404, no token 401 (all documented)")


if __name__ == "__main__":
    main()
