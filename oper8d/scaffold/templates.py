"""The files ``oper8d init`` writes, as text with ``[[placeholder]]`` fields.

Used by ``scaffold.create``. Placeholders are ``[[name]]``, ``[[kind]]``, ``[[group]]``,
``[[version]]``, ``[[sample]]`` and ``[[schema_base]]``; ``{{ }}`` is left alone for
Jinja. A test runs ``oper8d validate`` and ``oper8d test`` on what these produce.
"""

from __future__ import annotations

__all__ = ["FILES"]

OPERATOR = """\
# yaml-language-server: $schema=[[schema_base]]operator.schema.json
# Every field: docs/bundle-format.md of oper8d (and the schema above).
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata:
  name: [[name]]
  version: 0.1.0
  description: Runs an app configured by a ConfigMap, one Deployment per [[kind]].
controllers:
  - name: [[name]]
    resource:
      group: [[group]]
      version: [[version]]
      kind: [[kind]]
      # the OpenAPI v3 schema of the CR's spec: CRs are checked against it and its
      # defaults are filled in before any template sees `spec`
      schema:
        type: object
        required: [image]
        properties:
          # the app's version: written to status.versions.reconciled once rolled out
          version: {type: string, default: "1.0.0"}
          image: {type: string, description: Container image of the app}
          replicas: {type: integer, minimum: 1, default: 1}
          message: {type: string, default: "hello from [[name]]"}
    components:
      - name: app
        resources:
          - name: config
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: "{{ scoped_name('config') }}"
              data:
                MESSAGE: "{{ spec.message }}"
          - name: deployment
            object:
              apiVersion: apps/v1
              kind: Deployment
              metadata:
                name: "{{ scoped_name('app') }}"
              spec:
                replicas: "{{ spec.replicas }}"   # a lone expression keeps its type
                selector:
                  matchLabels: {app: "{{ scoped_name('app') }}"}
                template:
                  metadata:
                    labels: {app: "{{ scoped_name('app') }}"}
                  spec:
                    containers:
                      - name: app
                        image: "{{ spec.image }}"
                        envFrom:
                          - configMapRef: {name: "{{ scoped_name('config') }}"}
"""

SAMPLE = """\
apiVersion: [[group]]/[[version]]
kind: [[kind]]
metadata:
  name: [[sample]]
  namespace: default
spec:
  image: nginx:1.27
  replicas: 2
"""

TESTS = """\
# yaml-language-server: $schema=[[schema_base]]bundle-test.schema.json
# Run with `oper8d test .`; the format: docs/testing-bundles.md of oper8d.
description: What the [[name]] operator renders and how its rollout ends.
cases:
  - name: the sample renders as committed
    crFile: samples/[[sample]].yaml
    render:
      # the exact output of `oper8d render`; `oper8d test --update` rewrites it
      golden: tests/golden/[[sample]].yaml
      expect:
        - kind: Deployment
          name: [[sample]]-app
          fields:
            - {path: spec.replicas, equals: 2}
            - {path: spec.template.spec.containers.0.image, equals: "nginx:1.27"}

  - name: the image is required
    crFile: samples/[[sample]].yaml
    crPatch: {spec: {image: null}}
    error: "spec.image: required field is missing"

  - name: the sample becomes Ready
    crFile: samples/[[sample]].yaml
    rollout:
      ready: true
      components: {verified: [app]}
      created:
        - {kind: ConfigMap, name: [[sample]]-config}
"""

README = """\
# [[name]]

An oper8d operator bundle: it reconciles
`[[kind]]` resources (`[[group]]/[[version]]`) into a ConfigMap and a Deployment.

| file | what it is |
|---|---|
| `operator.yaml` | the operator: the `[[kind]]` schema and its components |
| `samples/[[sample]].yaml` | a sample `[[kind]]` |
| `tests/*.yaml` | test cases, run by `oper8d test` |
| `tests/golden/` | the exact `oper8d render` output the render cases compare with |

## Work on it

```bash
oper8d validate .                                   # every problem as file:line:col
oper8d render . --cr samples/[[sample]].yaml         # what the operator would apply
oper8d test .                                       # the cases in tests/
oper8d test . --update                              # accept a changed render (review the diff)
oper8d run . --dry-run --cr samples/[[sample]].yaml  # a rollout on the in-memory cluster
```

On a cluster: `oper8d run . --install-crds` (uses your kubeconfig), then
`kubectl apply -f samples/[[sample]].yaml`.

## Editor support

`operator.yaml` and the test files start with a modeline that the YAML language server
(VS Code's YAML extension, and editors built on it) reads to complete and check every
field:

```yaml
# yaml-language-server: $schema=https://oper8d.io/schemas/operator.schema.json
```

To work offline, or to use the schemas of the oper8d version you have installed, point the
modelines at the local copy that ships inside the oper8d package. Find the folder with

```bash
python -c "import oper8d, pathlib; print(pathlib.Path(oper8d.__file__).parent / 'schemas')"
```

and replace the URL with that path (absolute, or relative to the file):

```yaml
# yaml-language-server: $schema=/path/to/site-packages/oper8d/schemas/operator.schema.json
```

(`bundle-test.schema.json` is the one for `tests/*.yaml`). Or leave the files alone and map
the schemas in your editor's settings instead, e.g. VS Code's `settings.json`:

```json
"yaml.schemas": {
  "/path/to/oper8d/schemas/operator.schema.json": "operator.yaml",
  "/path/to/oper8d/schemas/bundle-test.schema.json": "tests/*.yaml"
}
```
"""

#: bundle-relative path -> template
FILES: dict[str, str] = {
    "operator.yaml": OPERATOR,
    "samples/[[sample]].yaml": SAMPLE,
    "tests/render.yaml": TESTS,
    "README.md": README,
}
