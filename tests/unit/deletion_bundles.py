"""The bundle the deletionPolicy tests share (unit and integration)."""

POLICIES = """
components:
  - name: data
    resources:
      - name: kept
        deletionPolicy: Retain
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('kept') }}"}}
      - name: handed
        deletionPolicy: Orphan
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('handed') }}"}}
  - name: app
    enabled: "spec.app | default(true)"
    dependsOn: [data]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('app') }}"}}
      - name: orphan
        deletionPolicy: Orphan
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('app-o') }}"}}
finalize:
  enabled: true
"""
