import { Controller, Get } from '@nestjs/common';
import { FleetService, ServedFleetView } from '../fleet/fleet.service';

/** The fleet view (schemas/fleet-api.v1.schema.json, docs/fleet.md): the same from every replica, as of its last computation. */
@Controller('fleet')
export class FleetController {
  constructor(private readonly fleet: FleetService) {}

  @Get()
  view(): ServedFleetView {
    return this.fleet.view;
  }
}
