import { Controller, Get, Header } from '@nestjs/common';
import { renderFleetPage } from '../../core/fleet/fleet-page-html';
import { FleetService, ServedFleetView } from '../fleet/fleet.service';

/** The fleet view (schemas/fleet-api.v1.schema.json, docs/fleet.md): the same from every replica, as of its last computation. */
@Controller('fleet')
export class FleetController {
  constructor(private readonly fleet: FleetService) {}

  @Get()
  view(): ServedFleetView {
    return this.fleet.view;
  }

  /** The fleet page: suspects, a heat map of nodes by locality, links to the affected jobs' pages. */
  @Get('view')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  // Nothing on the page loads from elsewhere or runs: say so to the browser too.
  @Header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'")
  page(): string {
    return renderFleetPage(this.fleet.view);
  }
}
