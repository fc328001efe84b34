// A form for one command (POST /v1/run-ffmpeg-command), with the placeholders explained.
import { useState } from 'preact/hooks';
import { ApiError, type Api, type FieldError } from './api.ts';
import { ErrorMessage, withCode } from './components.ts';
import { messageOf } from './format.ts';
import { html } from 'htm/preact';
import { go } from './router.ts';

interface Pair {
  alias: string;
  value: string;
}

const EXAMPLE = '-i {{in_1}} -vf scale=640:-2 -c:v libx264 -preset veryfast -c:a aac {{out_1}}';
const PLACEHOLDERS =
  'Files are named by placeholders. Write `{{in_1}}` where ffmpeg reads the input file `in_1`, and `{{out_1}}` where it ' +
  'writes the output `out_1`. Input names start with `in_`, output names with `out_`, then letters, digits or `_`.';
const INPUTS_AND_OUTPUTS =
  "Each input is a URL (http or https) ending in the file's name, downloaded before ffmpeg runs; the URL of a file stored " +
  'here works too. Each output is a file name only: its extension chooses the format. Outputs are stored and shown on the ' +
  "command's page.";

/** Rows of a form as the API's object; rows left empty are skipped. */
function objectOf(pairs: Pair[]): Record<string, string> {
  return Object.fromEntries(pairs.filter((p) => p.alias.trim() || p.value.trim()).map((p) => [p.alias.trim(), p.value.trim()]));
}

/** A number field as sent: left empty it is not sent (the service's default applies). */
function numberOf(text: string): number | string | undefined {
  if (!text.trim()) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : text; // the API says what is wrong with it
}

export function SubmitPage({ api, input }: { api: Api; input: string | null }) {
  const [command, setCommand] = useState(EXAMPLE);
  const [inputs, setInputs] = useState<Pair[]>([{ alias: 'in_1', value: input ?? '' }]);
  const [outputs, setOutputs] = useState<Pair[]>([{ alias: 'out_1', value: 'output.mp4' }]);
  const [vcpus, setVcpus] = useState('');
  const [maxSeconds, setMaxSeconds] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [fields, setFields] = useState<FieldError[]>([]);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setFields([]);
    try {
      const { command_id } = await api.submit({
        ffmpeg_command: command,
        input_files: objectOf(inputs),
        output_files: objectOf(outputs),
        vcpu_count: numberOf(vcpus),
        max_command_run_seconds: numberOf(maxSeconds),
      });
      go(`#/commands/${command_id}`);
    } catch (err) {
      setError(err instanceof ApiError && err.fields.length > 0 ? 'The service refused the command:' : messageOf(err));
      setFields(err instanceof ApiError ? err.fields : []);
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="submit">
    <h1>New command</h1>
    <!-- novalidate: the service checks every field and says what is wrong, by name -->
    <form onSubmit=${submit} novalidate>
      <label for="ffmpeg-command">FFmpeg arguments (without <code>ffmpeg</code> itself)</label>
      <textarea
        id="ffmpeg-command"
        rows="3"
        spellcheck="false"
        value=${command}
        onInput=${(e: Event) => setCommand((e.target as HTMLTextAreaElement).value)}
      ></textarea>
      <div class="explain">
        <p>${withCode(PLACEHOLDERS)}</p>
        <p>${withCode(INPUTS_AND_OUTPUTS)} Find stored files' URLs under <a href="#/files">Files</a>.</p>
      </div>
      <${Pairs} legend="Input files" prefix="in_" placeholder="https://example.com/media/video.mp4" pairs=${inputs} onChange=${setInputs} />
      <${Pairs} legend="Output files" prefix="out_" placeholder="video_640.mp4" pairs=${outputs} onChange=${setOutputs} />
      <div class="row">
        <label
          >vCPUs
          <input
            id="vcpu-count"
            type="number"
            min="1"
            step="1"
            placeholder="8"
            value=${vcpus}
            onInput=${(e: Event) => setVcpus((e.target as HTMLInputElement).value)}
        /></label>
        <label
          >Time limit (s)
          <input
            id="max-command-run-seconds"
            type="number"
            min="1"
            placeholder="300"
            value=${maxSeconds}
            onInput=${(e: Event) => setMaxSeconds((e.target as HTMLInputElement).value)}
        /></label>
      </div>
      <button type="submit" disabled=${busy}>${busy ? 'Submitting…' : 'Run command'}</button>
      <${ErrorMessage} error=${error} />
      ${
        fields.length > 0
          ? html`<ul class="field-errors">
              ${fields.map((f, i) => html`<li key=${i}><code>${f.loc.filter((part) => part !== 'body').join('.')}</code> ${f.msg}</li>`)}
            </ul>`
          : null
      }
    </form>
  </section>`;
}

function Pairs(p: { legend: string; prefix: string; placeholder: string; pairs: Pair[]; onChange: (pairs: Pair[]) => void }) {
  const set = (i: number, change: Partial<Pair>) => p.onChange(p.pairs.map((pair, j) => (j === i ? { ...pair, ...change } : pair)));
  const add = () => p.onChange([...p.pairs, { alias: `${p.prefix}${p.pairs.length + 1}`, value: '' }]);
  return html`<fieldset class="pairs-input" data-prefix=${p.prefix}>
    <legend>${p.legend}</legend>
    ${p.pairs.map(
      (pair, i) =>
        html`<div class="pair" key=${i}>
          <input
            class="alias"
            aria-label="name"
            spellcheck="false"
            value=${pair.alias}
            onInput=${(e: Event) => set(i, { alias: (e.target as HTMLInputElement).value })}
          />
          <input
            class="value"
            aria-label="value"
            spellcheck="false"
            placeholder=${p.placeholder}
            value=${pair.value}
            onInput=${(e: Event) => set(i, { value: (e.target as HTMLInputElement).value })}
          />
          <button type="button" class="link" onClick=${() => p.onChange(p.pairs.filter((_, j) => j !== i))}>Remove</button>
        </div>`,
    )}
    <button type="button" class="link" onClick=${add}>Add</button>
  </fieldset>`;
}
