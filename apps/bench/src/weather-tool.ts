/**
 * The tool the gate benchmark and the gate's integration tests call: a forecast whose arguments
 * have a string with a minimum length, an enum and a bounded integer, so the sim's invalid
 * arguments (`--invalid-tool-args`) break the schema in each way a model does.
 */
export const WEATHER_PARAMETERS = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 1 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'unit', 'days'],
};
