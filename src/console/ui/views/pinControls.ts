// The pinned issuer keys, and the one offer to pin them from /.well-known/proof-issuer.json.
import { errorBox, h, short } from '../dom.ts';
import { fetchIssuerKeys, forgetPins, pinKeys, pinnedKeys } from '../pins.ts';

/** The button's words, which the verification result quotes when it tells how to pin. */
export const PIN_BUTTON = 'Pin the issuer keys from /.well-known/proof-issuer.json';

export function pinControls(onChange?: () => void): HTMLElement {
  const box = h('div', { class: 'pins', 'data-testid': 'pins' });
  const draw = () => {
    const pins = pinnedKeys();
    box.replaceChildren(
      pins.length
        ? h(
            'p',
            null,
            `Pinned issuer key${pins.length > 1 ? 's' : ''} (kept in this browser): `,
            pins.map((k) => h('span', { class: 'pin' }, h('code', null, k.keyId ?? ''), ' ', short(k.publicKey, 16))),
            ' ',
            h(
              'button',
              {
                type: 'button',
                class: 'link',
                onclick: () => {
                  forgetPins();
                  draw();
                  onChange?.();
                },
              },
              'Forget pinned keys',
            ),
          )
        : h(
            'p',
            null,
            'No issuer key is pinned. ',
            h(
              'button',
              {
                type: 'button',
                'data-testid': 'pin-keys',
                onclick: async () => {
                  try {
                    pinKeys(await fetchIssuerKeys());
                    draw();
                    onChange?.();
                  } catch (err) {
                    box.append(errorBox(err));
                  }
                },
              },
              PIN_BUTTON,
            ),
            ' (asked once; later verifications use the pin, not the server).',
          ),
    );
  };
  draw();
  return box;
}
