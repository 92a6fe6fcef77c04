import { noopSink } from '@iop/stream-gate';
import { DEFAULT_GATE, GateRegistry } from '../../../src/gate/gate-registry.js';

const tools = [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } }];

describe('GateRegistry.needsContent: which Chat requests leave the byte passthrough', () => {
  const registry = new GateRegistry(
    { ...DEFAULT_GATE, models: { bare: { filters: [], policy: 'passthrough' } } },
    noopSink,
  );

  it('a tool_choice other than auto does, whatever the model’s filters', () => {
    for (const model of ['any-model', 'bare']) {
      for (const tool_choice of ['required', 'none', { type: 'function', function: { name: 'get_time' } }]) {
        expect(registry.needsContent(model, { model, messages: [], tools, tool_choice })).toBe(true);
      }
    }
  });

  it('auto or no tool_choice on a model without filters does not', () => {
    expect(registry.needsContent('bare', { model: 'bare', messages: [], tools, tool_choice: 'auto' })).toBe(false);
    expect(registry.needsContent('bare', { model: 'bare', messages: [], tools })).toBe(false);
    expect(registry.needsContent('any-model', { model: 'any-model', messages: [] })).toBe(false);
  });
});
