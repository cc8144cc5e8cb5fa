"""What each kind of bundle test case checks, and what its failures say.

A small demo bundle (a ConfigMap in two namespaces, a Job gating a Deployment, and a
``temp`` ConfigMap that exists only until the Job succeeds) is written per test with a
test file; ``oper8d test`` runs it (the command object, invoked directly) and the test
reads the PASS/FAIL lines as a user would.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from bundles import write_bundle
from click.testing import CliRunner, Result

from oper8d.cli import test_cmd

DEMO = """\
components:
  - name: config
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}"}
          data: {greeting: "{{ spec.greeting }}"}
      - name: elsewhere
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}", namespace: other}
          data: {x: "1"}
  - name: temp
    enabled: "live('job.job') is none or (live('job.job').status.succeeded | default(0)) < 1"
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('temp') }}"}
  - name: job
    dependsOn: [config]
    resources:
      - name: job
        object:
          apiVersion: batch/v1
          kind: Job
          metadata: {name: "{{ scoped_name('job') }}"}
          spec:
            template:
              spec:
                restartPolicy: Never
                containers: [{name: j, image: busybox}]
  - name: app
    dependsOn:
      - component: job
        when: "live('job.job').status.succeeded | default(0) >= 1"
    resources:
      - name: deployment
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata:
            name: "{{ scoped_name('app') }}"
            labels: {app.kubernetes.io/name: demo}
          spec:
            replicas: "{{ spec.replicas }}"
            selector: {matchLabels: {app: demo}}
            template:
              metadata: {labels: {app: demo}}
              spec:
                containers:
                  - name: app
                    image: "nginx:{{ spec.greeting | length }}"
                    env: [{name: GREETING, value: "{{ spec.greeting }}"}]
"""

SCHEMA = {
    "type": "object",
    "properties": {
        "greeting": {"type": "string", "default": "hi"},
        "replicas": {"type": "integer", "minimum": 1, "default": 1},
        "broken": {"type": "boolean", "default": False},
    },
}

CR = """\
apiVersion: demo.oper8d.io/v1alpha1
kind: Demo
metadata: {name: demo, namespace: default}
spec: {}
"""

JOB_FAILED = """\
      statuses:
        - kind: Job
          name: demo-job
          status:
            conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded}]
"""


def demo_bundle(tmp_path: Path, tests: str, controller: str = DEMO) -> Path:
    """The demo bundle with ``tests`` (dedented; a ``<job failed>`` line becomes the
    statuses that make the Job fail) as tests/cases.yaml."""
    text = re.sub(r"^ *<job failed>\n", JOB_FAILED, textwrap.dedent(tests), flags=re.M)
    return write_bundle(
        tmp_path / "demo",
        controller,
        schema=SCHEMA,
        files={"samples/demo.yaml": CR, "tests/cases.yaml": text},
    )


def run(bundle: Path, *args: str) -> Result:
    return CliRunner().invoke(test_cmd.test, [str(bundle), *args])


def case_lines(result: Result) -> list[str]:
    """The output without the summary line, the bundle path shortened to ``B``."""
    return result.stdout.splitlines()[:-1]


def shortened(result: Result, bundle: Path) -> list[str]:
    return [line.replace(str(bundle), "B") for line in case_lines(result)]


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


# -- render ------------------------------------------------------------------------------


def test_render_expectations_that_hold_pass(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: everything holds
            crFile: samples/demo.yaml
            crPatch: {spec: {greeting: hello}}
            render:
              count: {ConfigMap: 2, Deployment: 1, Job: 1, Secret: 0}
              expect:
                - kind: ConfigMap
                  name: demo-config
                  namespace: default
                  fields:
                    - {path: data.greeting, equals: hello}
                - internalName: app.deployment
                  fields:
                    - {path: spec.replicas, equals: 1}
                    - {path: spec.template.spec.containers.0.image, equals: "nginx:5"}
                    - {path: "metadata.labels[app.kubernetes.io/name]", equals: demo}
                    - {path: "spec.template.spec.containers[0].env", contains: {value: hello}}
                    - {path: spec.template.spec.containers.0.image, contains: nginx}
                    - {path: spec.paused, absent: true}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PASS  tests/cases.yaml::everything holds",
        "1 passed, 0 failed",
    ]


def test_failed_render_expectations_say_what_was_rendered_instead(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: everything is wrong
            crFile: samples/demo.yaml
            render:
              count: {Deployment: 2}
              expect:
                - kind: Deployment
                  name: demo-web
                - kind: Service
                  name: demo
                - kind: ConfigMap
                  name: demo-config
                - internalName: app.deployment
                  fields:
                    - {path: spec.replicas, equals: "1"}
                    - {path: spec.template.spec.containers.3.image, equals: nginx}
                    - {path: spec.selector, absent: true}
                    - {path: spec.template.spec.containers.0.env, contains: {value: bye}}
                    - {path: spec.strategy.type, contains: Roll}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 1
    file = "B/tests/cases.yaml"
    assert shortened(result, bundle) == [
        "FAIL  tests/cases.yaml::everything is wrong",
        f"      {file}:5:15: expected 2 Deployment objects, rendered 1: Deployment demo-app",
        f"      {file}:7:11: no rendered object Deployment demo-web (there are: Deployment "
        "demo-app (app.deployment))",
        f"      {file}:9:11: no rendered object Service demo (no Service at all; there are: "
        "ConfigMap demo-config, ConfigMap demo-config, Job demo-job, Deployment demo-app)",
        f"      {file}:11:11: 2 objects match ConfigMap demo-config (ConfigMap demo-config in "
        "default, ConfigMap demo-config in other): add namespace: or select by internalName:",
        f'      {file}:15:15: Deployment demo-app: spec.replicas: expected "1", got 1',
        f"      {file}:16:15: Deployment demo-app: spec.template.spec.containers.3.image: "
        'expected "nginx", but spec.template.spec.containers has 1 item',
        f"      {file}:17:15: Deployment demo-app: spec.selector: expected no value here, found "
        '{"matchLabels": {"app": "demo"}}',
        f"      {file}:18:15: Deployment demo-app: spec.template.spec.containers.0.env: expected "
        'a value containing {"value": "bye"}, got [{"name": "GREETING", "value": "hi"}]',
        f"      {file}:19:15: Deployment demo-app: spec.strategy.type: expected a value "
        "containing \"Roll\", but spec has no key 'strategy' (its keys: replicas, selector, "
        "template)",
    ]
    assert result.stdout.splitlines()[-1] == "0 passed, 1 failed"


def test_a_template_that_fails_to_render_is_reported_at_its_line_in_the_bundle(
    tmp_path: Path,
) -> None:
    broken = DEMO.replace('data: {x: "1"}', 'data: {x: "{{ spec.nothing.here }}"}')
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: renders
            crFile: samples/demo.yaml
            render: {count: {Job: 1}}
        """,
        controller=broken,
    )
    result = run(bundle)
    assert result.exit_code == 1
    line = line_of(bundle / "operator.yaml", "spec.nothing.here")
    [fail, reason] = shortened(result, bundle)
    assert fail == "FAIL  tests/cases.yaml::renders"
    assert reason.startswith(f"      B/operator.yaml:{line}:")
    assert "the render failed: ConfigError: " in reason
    assert "nothing" in reason


def test_a_cr_the_schema_refuses_is_reported_at_the_field_in_the_test_file(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: renders
            crFile: samples/demo.yaml
            crPatch:
              spec:
                replicas: 0
            render: {count: {Job: 1}}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 1
    assert shortened(result, bundle) == [
        "FAIL  tests/cases.yaml::renders",
        "      B/tests/cases.yaml:6:19: the render failed: ConfigError: spec.replicas: must be "
        ">= 1 (got 0)",
    ]


# -- error -------------------------------------------------------------------------------


def test_error_cases_pass_when_the_cr_is_refused_as_expected(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: the short form is a ConfigError containing the text
            crFile: samples/demo.yaml
            crPatch: {spec: {replicas: 0}}
            error: "spec.replicas: must be >= 1"
          - name: the long form can name the field
            cr:
              apiVersion: demo.oper8d.io/v1alpha1
              kind: Demo
              metadata: {name: demo}
              spec: {greeting: 3}
            error: {type: ConfigError, contains: must be a string, field: spec.greeting}
          - name: a CR the API server would refuse is a ClusterError
            crFile: samples/demo.yaml
            crPatch: {metadata: {labels: {"bad label": x}}}
            error: {type: ClusterError, contains: "label key name 'bad label'"}
          - name: FatalError covers every fatal error
            crFile: samples/demo.yaml
            crPatch: {kind: Other}
            error: {type: FatalError, contains: has no controller for}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "4 passed, 0 failed"


def test_error_cases_fail_when_the_error_is_missing_or_another_one(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: no error at all
            crFile: samples/demo.yaml
            error: "must be"
          - name: another type
            crFile: samples/demo.yaml
            crPatch: {spec: {replicas: 0}}
            error: {type: ClusterError}
          - name: another message
            crFile: samples/demo.yaml
            crPatch: {spec: {replicas: 0}}
            error: {contains: must be a string}
          - name: another field
            crFile: samples/demo.yaml
            crPatch: {spec: {replicas: 0}}
            error: {field: spec.greeting}
          - name: the bundle loads
            error: {type: BundleError}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 1
    file = "B/tests/cases.yaml"
    assert shortened(result, bundle) == [
        "FAIL  tests/cases.yaml::no error at all",
        f"      {file}:4:12: expected a ConfigError, but rendering the CR did not fail "
        "(4 objects applied, Ready True Stable)",
        "FAIL  tests/cases.yaml::another type",
        f"      {file}:8:12: expected a ClusterError, got a ConfigError: spec.replicas: must be "
        ">= 1 (got 0)",
        "FAIL  tests/cases.yaml::another message",
        f'      {file}:12:12: the ConfigError does not contain "must be a string"; its message '
        "is: spec.replicas: must be >= 1 (got 0)",
        "FAIL  tests/cases.yaml::another field",
        f"      {file}:16:12: expected the error to be about spec.greeting, it is about "
        "spec.replicas: spec.replicas: must be >= 1 (got 0)",
        "FAIL  tests/cases.yaml::the bundle loads",
        f"      {file}:18:12: expected the bundle not to load, but it loaded",
    ]


def test_a_bundle_error_case_checks_that_a_broken_bundle_is_refused(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: an unknown key is refused with a suggestion
            bundle: tests/broken
            error: {type: BundleError, contains: "unknown key 'dependOn'"}
          - name: the message is checked
            bundle: tests/broken
            error: {type: BundleError, contains: "no such text"}
        """,
    )
    broken = write_bundle(
        bundle / "tests" / "broken", DEMO.replace("dependsOn: [config]", "dependOn: [config]")
    )
    result = run(bundle)
    assert result.exit_code == 1
    lines = shortened(result, bundle)
    assert lines[0] == "PASS  tests/cases.yaml::an unknown key is refused with a suggestion"
    assert lines[1] == "FAIL  tests/cases.yaml::the message is checked"
    line = line_of(broken / "operator.yaml", "dependOn")
    assert lines[2].startswith(
        '      B/tests/cases.yaml:7:12: the BundleError does not contain "no such text"; its '
        f"message is: operator.yaml:{line}:"
    )


def test_when_the_bundle_does_not_load_every_case_that_needs_it_fails_with_its_problems(
    tmp_path: Path,
) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: render
            crFile: samples/demo.yaml
            render: {count: {Job: 1}}
          - name: expected
            error: {type: BundleError, contains: "unknown key 'dependOn'"}
        """,
        controller=DEMO.replace("dependsOn: [config]", "dependOn: [config]"),
    )
    result = run(bundle)
    assert result.exit_code == 1
    line = line_of(bundle / "operator.yaml", "dependOn")
    assert shortened(result, bundle) == [
        "FAIL  tests/cases.yaml::render",
        "      B/tests/cases.yaml:2:5: the bundle does not load (1 problem; `oper8d validate` "
        "shows the same):",
        f"      B/operator.yaml:{line}:9: unknown key 'dependOn' in component 'job' (did you "
        "mean 'dependsOn'?)",
        "PASS  tests/cases.yaml::expected",
    ]


# -- rollout -----------------------------------------------------------------------------


def test_a_failed_job_case_passes_when_the_app_is_never_created(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: the Job failed, the app never existed
            crFile: samples/demo.yaml
            rollout:
              <job failed>
              ready: false
              condition:
                - {type: Ready, status: "False", reason: Errored, messageContains: "'job' failed"}
                - {type: Stalled, status: "True"}
              components:
                failed: [job]
                verified: [config]
                deployed: [config, job, temp]
                unverified: [app, temp]
                unstarted: []
                waiting: [app]
              fields:
                - {path: status.componentStatus.failedComponents, equals: [job]}
              created:
                - {kind: Job, name: demo-job}
                - {internalName: temp.cm}
              notCreated:
                - {kind: Deployment, name: demo-app}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 0, result.output


def test_failed_rollout_expectations_say_how_the_run_ended(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: wrong about everything
            crFile: samples/demo.yaml
            rollout:
              <job failed>
              ready: true
              condition: {type: Ready, reason: Stable}
              components: {failed: [app]}
              fields:
                - {path: status.versions.reconciled, equals: "1.0"}
              created:
                - {kind: Deployment, name: demo-app}
              notCreated:
                - {kind: Job, name: demo-job}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 1
    message = (
        "component 'job' failed: Job default/demo-job: job failed: Failed is True "
        "(BackoffLimitExceeded)"
    )
    file = "B/tests/cases.yaml"
    assert shortened(result, bundle) == [
        "FAIL  tests/cases.yaml::wrong about everything",
        f"      {file}:10:14: expected the CR to be Ready, but Ready is False (Errored: {message})",
        f'      {file}:11:18: condition Ready: expected reason "Stable", got "Errored" (it is '
        f"False Errored: {message})",
        f"      {file}:12:28: failed components: expected [app], got [job] (not failed: app; "
        "also failed: job)",
        # a custom resource is stored with sorted keys, as the API server stores it
        f'      {file}:14:11: the CR: status.versions.reconciled: expected "1.0", but status '
        "has no key 'versions' (its keys: "
        + "componentStatus, conditions, demoStatus, observedGeneration, operatorVersion)",
        f"      {file}:16:11: Deployment demo-app was never created (the cluster holds: "
        "ConfigMap default/demo-config, ConfigMap default/demo-temp, ConfigMap "
        "other/demo-config, Demo default/demo, Job default/demo-job)",
        f"      {file}:18:11: Job demo-job was created during the run (expected it never to exist)",
        f"      the run ended after 1 reconcile: Ready False Errored: {message}",
    ]


def test_an_object_deleted_again_counts_as_created_but_not_as_existing(tmp_path: Path) -> None:
    bundle = demo_bundle(
        tmp_path,
        """\
        cases:
          - name: temp came and went
            crFile: samples/demo.yaml
            rollout:
              readyAfter: 1
              ready: true
              created:
                - {internalName: temp.cm}
              notCreated:
                - {kind: ConfigMap, name: demo-temp}
        """,
    )
    result = run(bundle)
    assert result.exit_code == 1
    assert shortened(result, bundle) == [
        "FAIL  tests/cases.yaml::temp came and went",
        "      B/tests/cases.yaml:8:11: temp.cm was created but no longer exists when the run "
        "ended",
        "      B/tests/cases.yaml:10:11: ConfigMap demo-temp was created during the run "
        "(expected it never to exist)",
        "      the run ended after 3 reconciles: Ready True Stable: Verify Complete",
    ]


@pytest.mark.parametrize(("max_reconciles", "ready"), [(1, "false"), (5, "true")])
def test_ready_after_and_max_reconciles_shape_the_simulated_rollout(
    tmp_path: Path, max_reconciles: int, ready: str
) -> None:
    bundle = demo_bundle(
        tmp_path,
        f"""\
        cases:
          - name: slow workloads
            crFile: samples/demo.yaml
            rollout:
              readyAfter: 1
              maxReconciles: {max_reconciles}
              ready: {ready}
        """,
    )
    assert run(bundle).exit_code == 0
