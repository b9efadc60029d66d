/**
 * Kubernetes manifests: `kubectl kustomize` renders the base and every overlay offline, every
 * object validates against the Kubernetes and prometheus-operator schemas (kubernetes-models),
 * and what matters for running pipemorph holds: non-root read-only container, probes, ports,
 * replicas and disruption budget per overlay, network policy, configuration and monitoring
 * wiring. Also the Dockerfile's static shape.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { parse } from 'yaml';
import { K8sObject, kustomize, ROOT } from './support/ops';

/** apiVersion/kind -> model; an object of any other kind fails the test. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Namespace': Namespace,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

const BUILDS = ['deploy/base', 'deploy/overlays/dev', 'deploy/overlays/production'];
const rendered = new Map(BUILDS.map((dir) => [dir, kustomize(dir)]));
const SELECTOR = { 'app.kubernetes.io/name': 'pipemorph', 'app.kubernetes.io/component': 'daemon' };

function one(objects: K8sObject[], kind: string, name = 'pipemorph'): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  expect(found).toHaveLength(1);
  return found[0];
}
function byPrefix(objects: K8sObject[], kind: string, prefix: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name.startsWith(prefix));
  expect(found).toHaveLength(1);
  return found[0];
}
const daemonContainer = (objects: K8sObject[]) => one(objects, 'Deployment').spec.template.spec.containers.find((c: { name: string }) => c.name === 'pipemorph');

describe.each(BUILDS)('kustomize %s', (dir) => {
  const objects = rendered.get(dir)!;

  it('renders only known kinds, each valid against its schema', () => {
    expect(objects.length).toBeGreaterThanOrEqual(9);
    for (const object of objects) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect({ object: `${object.apiVersion} ${object.kind} ${object.metadata?.name}`, known: Model !== undefined }).toEqual({ object: `${object.apiVersion} ${object.kind} ${object.metadata?.name}`, known: true });
      expect(() => new Model(object as never).validate()).not.toThrow();
    }
  });

  it('labels every object app.kubernetes.io/*', () => {
    for (const object of objects) {
      expect(object.metadata.labels?.['app.kubernetes.io/name']).toBeDefined();
      expect(object.metadata.labels?.['app.kubernetes.io/part-of']).toBe('pipemorph');
      expect(object.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('kustomize');
    }
  });

  it('runs the daemon non-root with a read-only root filesystem and no privileges', () => {
    const pod = one(objects, 'Deployment').spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(pod.automountServiceAccountToken).toBe(false);
    for (const container of pod.containers) {
      expect(container.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } });
      expect(container.resources.requests).toEqual({ cpu: expect.anything(), memory: expect.anything() });
      expect(container.resources.limits).toEqual({ cpu: expect.anything(), memory: expect.anything() });
    }
  });

  it('probes /health/live and /health/ready on the named http port, which the Service and ServiceMonitor use for /metrics', () => {
    const container = daemonContainer(objects);
    const port = container.ports.find((p: { name: string }) => p.name === 'http');
    expect(port).toEqual({ name: 'http', containerPort: 8080, protocol: 'TCP' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
    expect(container.startupProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });

    const service = one(objects, 'Service');
    expect(service.spec.selector).toEqual(SELECTOR);
    const servicePort = service.spec.ports.find((p: { targetPort: string }) => p.targetPort === 'http');
    expect(servicePort).toBeDefined();
    const monitor = one(objects, 'ServiceMonitor');
    expect(monitor.spec.selector.matchLabels).toEqual(SELECTOR);
    for (const [key, value] of Object.entries(SELECTOR)) expect(service.metadata.labels?.[key]).toBe(value);
    expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: servicePort.name, path: '/metrics', honorLabels: true })]);
    expect(one(objects, 'Deployment').spec.template.metadata.labels).toMatchObject(SELECTOR);
    expect(one(objects, 'Deployment').spec.selector.matchLabels).toEqual(SELECTOR);
  });

  it('mounts the configuration generated from config/default.json and takes REDIS_URL from a Secret', () => {
    const deployment = one(objects, 'Deployment');
    const container = daemonContainer(objects);
    const env = Object.fromEntries(container.env.map((e: { name: string }) => [e.name, e]));
    expect(env.REDIS_URL.valueFrom.secretKeyRef).toEqual({ name: expect.stringMatching(/^pipemorph-redis/), key: 'url' });
    expect(Object.keys(env).filter((name) => name.startsWith('OTEL_'))).toEqual([]); // tracing off by default
    const configMap = byPrefix(objects, 'ConfigMap', 'pipemorph-config');
    expect(configMap.data['default.json']).toBe(readFileSync(join(ROOT, 'config/default.json'), 'utf8'));
    const volume = deployment.spec.template.spec.volumes.find((v: { configMap?: { name: string } }) => v.configMap?.name === configMap.metadata.name);
    expect(volume).toBeDefined();
    const mount = container.volumeMounts.find((m: { name: string }) => m.name === volume.name);
    expect(env.PIPEMORPH_CONFIG.value).toBe(`${mount.mountPath}/default.json`);
    // The read-only root filesystem needs a writable /tmp.
    const tmp = container.volumeMounts.find((m: { mountPath: string }) => m.mountPath === '/tmp');
    expect(deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === tmp.name).emptyDir).toBeDefined();
  });

  it('admits only the metrics scraper in, and only Redis and DNS out', () => {
    const policy = one(objects, 'NetworkPolicy');
    expect(policy.spec.podSelector.matchLabels).toEqual(SELECTOR);
    expect(policy.spec.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
    expect(policy.spec.ingress).toHaveLength(1);
    expect(policy.spec.ingress[0].ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(policy.spec.ingress[0].from).toEqual([{ namespaceSelector: { matchLabels: expect.any(Object) }, podSelector: { matchLabels: expect.any(Object) } }]);
    const egressPorts = policy.spec.egress.flatMap((rule: { ports: Array<{ port: number; protocol: string }> }) => rule.ports.map((p) => `${p.protocol}/${p.port}`)).sort();
    expect(egressPorts).toEqual(['TCP/53', 'TCP/6379', 'UDP/53']);
    const dns = policy.spec.egress.find((rule: { ports: Array<{ port: number }> }) => rule.ports.some((p) => p.port === 53));
    expect(dns.to).toBeDefined();
  });

  it('provisions the Grafana dashboard and the PrometheusRule from their files', () => {
    const dashboard = one(objects, 'ConfigMap', 'pipemorph-dashboard');
    expect(dashboard.metadata.labels?.grafana_dashboard).toBe('1');
    expect(dashboard.data['pipemorph.dashboard.json']).toBe(readFileSync(join(ROOT, 'deploy/grafana/pipemorph.dashboard.json'), 'utf8'));
    const rule = one(objects, 'PrometheusRule');
    const rules = parse(readFileSync(join(ROOT, 'deploy/prometheus/pipemorph.rules.yml'), 'utf8'));
    expect(rule.spec.groups).toEqual(rules.groups);
  });
});

describe('overlays', () => {
  const deployment = (dir: string) => one(rendered.get(dir)!, 'Deployment');
  const pdb = (dir: string) => one(rendered.get(dir)!, 'PodDisruptionBudget');

  it('base: several replicas, one at a time may be disrupted', () => {
    expect(deployment('deploy/base').spec.replicas).toBeGreaterThanOrEqual(2);
    expect(pdb('deploy/base').spec).toMatchObject({ maxUnavailable: 1 });
  });

  it('dev: one replica, a namespace, a Redis and its Secret', () => {
    const objects = rendered.get('deploy/overlays/dev')!;
    expect(deployment('deploy/overlays/dev').spec.replicas).toBe(1);
    expect(pdb('deploy/overlays/dev').spec.minAvailable).toBeUndefined();
    const namespace = one(objects, 'Namespace', 'pipemorph-dev');
    expect(objects.filter((o) => o.kind !== 'Namespace').every((o) => o.metadata.namespace === namespace.metadata.name)).toBe(true);
    const secret = byPrefix(objects, 'Secret', 'pipemorph-redis');
    expect(daemonContainer(objects).env.find((e: { name: string }) => e.name === 'REDIS_URL').valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
    const url = Buffer.from(secret.data.url, 'base64').toString();
    const redisService = one(objects, 'Service', 'pipemorph-redis');
    expect(url).toBe(`redis://${redisService.metadata.name}:${redisService.spec.ports[0].port}`);
    const redis = one(objects, 'Deployment', 'pipemorph-redis').spec.template.spec;
    expect(redis.securityContext.runAsNonRoot).toBe(true);
    expect(redis.containers[0].securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
  });

  it('production: three replicas, at least two kept available, more resources than dev, Secret created out of band', () => {
    const objects = rendered.get('deploy/overlays/production')!;
    expect(deployment('deploy/overlays/production').spec.replicas).toBe(3);
    expect(pdb('deploy/overlays/production').spec.minAvailable).toBe(2);
    expect(pdb('deploy/overlays/production').spec.maxUnavailable).toBeUndefined();
    const memory = (dir: string) => parseInt(daemonContainer(rendered.get(dir)!).resources.limits.memory, 10) * (/Gi$/.test(daemonContainer(rendered.get(dir)!).resources.limits.memory) ? 1024 : 1);
    expect(memory('deploy/overlays/production')).toBeGreaterThan(memory('deploy/overlays/dev'));
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    one(objects, 'Namespace', 'pipemorph');
    expect(objects.filter((o) => o.kind !== 'Namespace').every((o) => o.metadata.namespace === 'pipemorph')).toBe(true);
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const instructions = dockerfile.split('\n').filter((l) => /^[A-Z]+\s/.test(l));
  const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));

  it('builds in one stage and runs the compiled daemon as a non-root user in a Node 20 runtime stage', () => {
    const stages = instructions.filter((l) => l.startsWith('FROM '));
    expect(stages.map((l) => l.split(/\s+/).pop())).toEqual(['build', 'runtime']);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:20[-.\w]*$/m);
    expect(instructions).toContain('RUN npm run build');
    expect(instructions.some((l) => /^RUN npm ci --omit=dev/.test(l))).toBe(true);
    const runtime = instructions.slice(instructions.indexOf(stages[1]));
    const user = runtime.find((l) => l.startsWith('USER '));
    expect(user).toMatch(/^USER [1-9]\d*(:[1-9]\d*)?$/);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    const cmd = instructions[instructions.length - 1];
    expect(cmd.startsWith('CMD [')).toBe(true); // exec form: node is PID 1 and gets SIGTERM
    expect(JSON.parse(cmd.slice(4))).toEqual(pkg.scripts.start.split(' '));
    expect(existsSync(join(ROOT, pkg.scripts.start.split(' ').at(-1)!))).toBe(true); // built by npm run build
  });

  it('copies only files that exist and that .dockerignore lets into the context', () => {
    const sources = instructions.filter((l) => l.startsWith('COPY ') && !l.includes('--from=')).flatMap((l) => l.split(/\s+/).slice(1, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect({ source, exists: existsSync(join(ROOT, source)) }).toEqual({ source, exists: true });
      expect({ source, ignored: ignored.includes(source) }).toEqual({ source, ignored: false });
    }
    for (const heavy of ['node_modules', 'dist', '.git']) expect(ignored).toContain(heavy);
  });
});
