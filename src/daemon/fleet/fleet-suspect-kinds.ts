import { FleetSuspectKind } from '../../core/fleet/fleet-view.type';

/** Every suspect kind, as the metric label spells it (Prometheus label values; bounded). */
export const FLEET_SUSPECT_KINDS = Object.keys({ nic: 1, uplink: 1, boundary: 1, 'node-pair': 1, compute: 1 } satisfies Record<FleetSuspectKind, 1>) as FleetSuspectKind[];

export const metricKind = (kind: FleetSuspectKind): string => kind.replace('-', '_');
