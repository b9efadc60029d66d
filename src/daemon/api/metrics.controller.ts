import { Controller, Get, Res } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { scrapeYielding } from '../metrics/scrape-yielding.util';

/** The part of Express's response this endpoint writes with. */
interface PlainResponse {
  setHeader(name: string, value: string): void;
  end(body: string): void;
}

@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /**
   * Written with `res.end`, not returned: Express would hash the whole text for an ETag (about 10
   * ms of the event loop per scrape at 10,000 ranks), which no Prometheus scrape uses.
   */
  @Get()
  async scrape(@Res() res: PlainResponse): Promise<void> {
    const text = await scrapeYielding(this.metrics.registry);
    res.setHeader('Content-Type', 'text/plain; version=0.0.4; charset=utf-8');
    res.end(text);
  }
}
