/**
 * The web console in a real browser: Debian's Chromium (`/usr/bin/chromium`, installed by `.ci/run`) driven by
 * playwright-core, against a real edge, agent and sim. Logs in with the admin key (a wrong one is refused), sees the
 * agent, drains and undrains it, sees a request in flight, creates a key (its secret shown once), makes requests with
 * it through the `openai` SDK, sees their usage and cost (the price table applied to the SDK's usage), rotates and
 * revokes the key, and logs out. Screenshots go to test-artifacts/console/ (printed). Without Chromium the suite is
 * skipped with a printed reason.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ROOT, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';
import { ADMIN_KEY, admin } from './shared-state-helpers';

const CHROMIUM = '/usr/bin/chromium';
// Without the background-networking flags Chromium keeps calling Google's services (closed network here).
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'console');
const SLOW_MODEL = 'sim-model@itl-ms=400'; // ~8 s of tokens: long enough to be seen in flight
const PRICE = { input: 3, output: 15 }; // USD per million tokens, for sim-model
const usd = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 4,
});

const describeWithChromium = existsSync(CHROMIUM) ? describe : describe.skip;
if (!existsSync(CHROMIUM))
  console.log(`skipping the console browser test: no ${CHROMIUM} (apt-get install -y chromium)`);

describeWithChromium('web console in Chromium', () => {
  let edge: EdgeHandle;
  let context: BrowserContext;
  let page: Page;
  let userDataDir: string;
  const problems: string[] = [];

  const shot = async (name: string) => {
    const file = path.join(ARTIFACTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    return file;
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-console-'));
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20']);
    // A price table, so the ledger reports money (USD per million tokens; ledger/pricing.ts).
    const configFile = path.join(dataDir, 'edge.json');
    writeFileSync(configFile, JSON.stringify({ pricing: { models: { 'sim-model': PRICE } } }));
    edge = await startEdge({
      args: ['--config', configFile],
      env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY },
    });
    await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-console',
      backendUrl: sim.url,
      models: ['sim-model', SLOW_MODEL],
    });
    userDataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    // Any CSP violation or script error fails the suite (checked in afterAll's test below).
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    console.log(`console screenshots: ${ARTIFACTS}`);
  }, 90_000);

  afterAll(async () => {
    await context?.close();
    if (userDataDir !== undefined) rmSync(userDataDir, { recursive: true, force: true });
    await stopAll();
  });

  it('refuses a wrong admin key, on the login page and on the admin API', async () => {
    await page.goto(`${edge.url}/console`);
    await page.getByLabel('Admin key').fill('not-the-admin-key-000000');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('invalid admin key');
    await shot('login-refused');
    expect(
      (await fetch(`${edge.url}/admin/agents`, { headers: { authorization: 'Bearer not-the-admin-key-000000' } }))
        .status,
    ).toBe(401);
    expect((await fetch(`${edge.url}/admin/agents`)).status).toBe(401);
  }, 30_000);

  it('logs in with the admin key and shows the connected agent; the page keeps no key and runs under a strict CSP', async () => {
    const response = await page.goto(`${edge.url}/console/`);
    expect(response!.headers()['content-security-policy']).toContain("default-src 'self'");
    expect(response!.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await page.getByLabel('Admin key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Log in' }).click();
    const row = page.getByRole('row', { name: /agent-console/ });
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('sim-model');
    await expect(row.getByText('ok', { exact: true }).count()).resolves.toBe(1);
    // The cookie is HttpOnly: scripts see none of it; nothing is stored.
    await expect(page.evaluate('[document.cookie, localStorage.length, sessionStorage.length]')).resolves.toEqual([
      '',
      0,
      0,
    ]);
    const [cookie] = await context.cookies(edge.url);
    expect(cookie).toMatchObject({ name: 'iop_console', httpOnly: true, sameSite: 'Strict' });
    expect(cookie!.value).not.toContain(ADMIN_KEY);
    // The cookie alone does not change state: no CSRF token, no change (the page's own calls send it).
    const forged = await fetch(`${edge.url}/admin/agents/agent-console/drain`, {
      method: 'POST',
      headers: { cookie: `iop_console=${cookie!.value}`, origin: edge.url },
    });
    expect(forged.status).toBe(403);
    console.log(`screenshot: ${await shot('agents')}`);
  }, 30_000);

  it('drains and undrains the agent from its row', async () => {
    const row = page.getByRole('row', { name: /agent-console/ });
    await row.getByRole('button', { name: 'Drain agent agent-console' }).click();
    await row.getByText('draining', { exact: true }).waitFor();
    const agents = await admin(edge.url, 'GET', '/admin/agents');
    expect((agents.body.data as Array<{ drain: { draining: boolean } }>)[0]!.drain.draining).toBe(true);
    await shot('agent-draining');
    await row.getByRole('button', { name: 'Undrain agent agent-console' }).click();
    await row.getByText('ok', { exact: true }).waitFor();
    const after = await admin(edge.url, 'GET', '/admin/agents');
    expect((after.body.data as Array<{ drain: { draining: boolean } }>)[0]!.drain.draining).toBe(false);
  }, 30_000);

  it('shows a request in flight, and the pool routing it', async () => {
    const client = new OpenAI({ apiKey: 'sk-iop-test-key-0001', baseURL: edge.baseURL, maxRetries: 0 });
    const slow = client.chat.completions.create({
      model: SLOW_MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    await page.getByRole('link', { name: 'Requests' }).click();
    const row = page.getByRole('row', { name: /sim-model@itl-ms=400/ });
    await row.waitFor({ timeout: 15_000 });
    await expect(row.textContent()).resolves.toMatch(/openai-chat.*agent-console.*running/);
    console.log(`screenshot: ${await shot('requests')}`);
    // The same list for scripts, with the admin key.
    const listed = await admin(edge.url, 'GET', '/admin/requests');
    expect(listed.body.data).toMatchObject([
      {
        dialect: 'openai-chat',
        model: SLOW_MODEL,
        servedModel: SLOW_MODEL,
        agent: 'agent-console',
        phase: 'running',
        attempts: 1,
      },
    ]);
    await page.getByRole('link', { name: 'Pool' }).click();
    await page.getByRole('heading', { name: /sim-model@itl-ms=400/ }).waitFor();
    const provider = page
      .getByRole('region', { name: 'Providers of sim-model@itl-ms=400' })
      .getByRole('row', { name: /agent-console/ });
    await expect(provider.textContent()).resolves.toMatch(/1 \/ 16.*healthy/);
    console.log(`screenshot: ${await shot('pool')}`);
    for await (const chunk of await slow) void chunk;
    await page.getByRole('link', { name: 'Requests' }).click();
    await page.getByText('No request in flight.').waitFor({ timeout: 10_000 });
  }, 60_000);

  let keyId: string;
  let secret: string;
  const answers: OpenAI.Chat.Completions.ChatCompletion[] = [];

  it('creates a key whose secret is shown once, and the key works', async () => {
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByLabel('Name').fill('console-e2e');
    await page.getByLabel('Owner (optional)').fill('qa');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('key-secret');
    await shown.waitFor();
    secret = await shown.inputValue();
    expect(secret.length).toBeGreaterThan(20);
    const row = page.locator('tr', { hasText: 'console-e2e' });
    await row.waitFor();
    keyId = (await row.getAttribute('data-key-id'))!;
    console.log(`screenshot: ${await shot('key-created')}`);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await expect(page.getByTestId('key-secret').count()).resolves.toBe(0);
    // Not shown again: neither after a reload nor by the admin API.
    await page.reload();
    await page.locator('tr', { hasText: 'console-e2e' }).waitFor();
    await expect(page.content()).resolves.not.toContain(secret);
    expect(JSON.stringify((await admin(edge.url, 'GET', `/admin/keys/${keyId}`)).body)).not.toContain(secret);
    const client = new OpenAI({ apiKey: secret, baseURL: edge.baseURL, maxRetries: 0 });
    for (let i = 0; i < 3; i++)
      answers.push(
        await client.chat.completions.create({
          model: 'sim-model',
          messages: [{ role: 'user', content: `hello ${i}` }],
        }),
      );
  }, 60_000);

  it("shows the key's usage and cost (the price table applied) by key, model and agent", async () => {
    const ledger = await admin(edge.url, 'GET', `/admin/usage?group_by=key&key=${keyId}&flush=true`);
    const [api] = ledger.body.data as Array<{
      requests: number;
      input_tokens: number;
      output_tokens: number;
      cost_usd: number;
    }>;
    const input = answers.reduce((sum, answer) => sum + answer.usage!.prompt_tokens, 0);
    const output = answers.reduce((sum, answer) => sum + answer.usage!.completion_tokens, 0);
    expect(api).toMatchObject({ requests: 3, input_tokens: input, output_tokens: output });
    await page.getByRole('link', { name: 'Usage' }).click();
    const row = page.getByRole('row', { name: new RegExp(`^${keyId}`) });
    await row.waitFor();
    const cells = await row.getByRole('cell').allTextContents();
    expect(cells.slice(0, 4)).toEqual(
      ['3', String(input), '0', String(output)].map((value) => Number(value).toLocaleString('en-US')),
    );
    // The price table applied to the usage the SDK saw (no cached tokens from the sim).
    const cost = (input * PRICE.input + output * PRICE.output) / 1_000_000;
    expect(api!.cost_usd).toBeCloseTo(cost, 12);
    await expect(page.getByRole('columnheader', { name: 'Cost (USD)' }).count()).resolves.toBe(1);
    expect(cells[5]).toBe(usd.format(cost));
    // The chart in money.
    await page.getByLabel('Show').selectOption('cost_usd');
    await page.getByText('Cost (USD) per day by key (UTC)').waitFor();
    console.log(`screenshot: ${await shot('cost-by-key')}`);
    await page.getByLabel('Show').selectOption('tokens');
    await expect(page.locator('.chart canvas').count()).resolves.toBeGreaterThan(0);
    console.log(`screenshot: ${await shot('usage-by-key')}`);
    await page.getByRole('radio', { name: 'Model' }).check();
    await page.getByRole('row', { name: /^sim-model 3 / }).waitFor(); // the key's three; the slow stream is under its own model name
    await page.getByRole('radio', { name: 'Agent' }).check();
    await page.getByRole('row', { name: /^agent-console 4 / }).waitFor(); // the key's three and the slow stream
    console.log(`screenshot: ${await shot('usage-by-agent')}`);
  }, 60_000);

  it('rotates the key: the new secret is shown once and works, the old one is refused', async () => {
    await page.getByRole('link', { name: 'Keys' }).click();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator(`tr[data-key-id="${keyId}"]`).getByRole('button', { name: 'Rotate key console-e2e' }).click();
    const shown = page.getByTestId('key-secret');
    await shown.waitFor();
    const rotated = await shown.inputValue();
    expect(rotated).not.toBe(secret);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await expect(
      new OpenAI({ apiKey: secret, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions.create({
        model: 'sim-model',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(
      new OpenAI({ apiKey: rotated, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions.create({
        model: 'sim-model',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).resolves.toMatchObject({ object: 'chat.completion' });
    secret = rotated;
  }, 30_000);

  it('revokes the key: the client is refused from then on', async () => {
    page.once('dialog', (dialog) => void dialog.accept());
    const row = page.locator(`tr[data-key-id="${keyId}"]`);
    await row.getByRole('button', { name: 'Revoke key console-e2e' }).click();
    await row.getByText('revoked', { exact: true }).waitFor();
    await shot('key-revoked');
    await expect(
      new OpenAI({ apiKey: secret, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions.create({
        model: 'sim-model',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  }, 30_000);

  it('moves through the sections with the keyboard', async () => {
    await page.goto(`${edge.url}/console/#/agents`);
    await page.reload(); // a fresh page: the focus starts at the document
    await page.getByRole('row', { name: /agent-console/ }).waitFor();
    await page.keyboard.press('Tab'); // the skip link comes first
    await expect(page.evaluate('document.activeElement?.textContent')).resolves.toBe('Skip to content');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await expect(page.evaluate('document.activeElement?.textContent')).resolves.toBe('Pool');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Pool and routing' }).waitFor();
    await expect(page.getByRole('link', { name: 'Pool' }).getAttribute('aria-current')).resolves.toBe('page');
  }, 30_000);

  it('logs out: the session cookie no longer opens the admin API', async () => {
    const [cookie] = await context.cookies(edge.url);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Admin key').waitFor();
    expect(
      (await fetch(`${edge.url}/admin/agents`, { headers: { cookie: `iop_console=${cookie!.value}` } })).status,
    ).toBe(401);
    await shot('logged-out');
  }, 30_000);

  it('had no CSP violation and no script error', () => {
    // The refused login's 401 is logged by Chromium as a failed resource load; nothing else may be.
    expect(problems.filter((text) => !/status of 401/.test(text))).toEqual([]);
  });
});
