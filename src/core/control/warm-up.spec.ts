import { DEFAULT_CONTROL_CONFIG } from './control-config.type';
import { warmUpDecisions } from './warm-up';

describe('warmUpDecisions', () => {
  it('runs a reaction to a straggler and its recovery per round', () => {
    // Reactions plan around the slow link; recoveries go back to the plan for healthy links.
    expect(warmUpDecisions({ ...DEFAULT_CONTROL_CONFIG, planner: 'adaptive' }, 4)).toEqual(['straggler', 'recovery', 'straggler', 'recovery', 'straggler', 'recovery', 'straggler', 'recovery']);
  });

  it('does nothing for 0 rounds (warm-up disabled)', () => {
    expect(warmUpDecisions(DEFAULT_CONTROL_CONFIG, 0)).toEqual([]);
  });
});
