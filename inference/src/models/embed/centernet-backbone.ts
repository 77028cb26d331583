import type { RgbPixels } from '../../image/decode.ts';
import type { Float32Tensor, ModelSource } from '../../runtime/runtime.ts';
import { CENTERNET_SOURCE } from '../detect/centernet.ts';
import { onBlackSquare } from '../model-input.ts';
import { MOBILENET_V2_INPUT_SIZE } from './mobilenet-v2.ts';

/** MobileNetV3's last bottleneck block (linear projection plus residual, before the head's upsampling): 120 channels. */
export const CENTERNET_BACKBONE_NODE = 'tower_0/MobilenetV3/expanded_conv_14/add';

/**
 * The detector's graph (detect/centernet.ts) cut after its MobileNetV3 backbone, as the fused embedding's second
 * network: trained on other data (COCO's objects) than MobileNetV2, it adds what kind of thing is shown (issue 21).
 * Read at MobileNetV2's 224x224, so that one resized view feeds both networks (7x7 positions), and with a free batch,
 * so that an image's views share a run; the detector reads the same file at 512x512, one image a run.
 */
export const CENTERNET_BACKBONE_SOURCE: ModelSource = {
  ...CENTERNET_SOURCE,
  name: 'centernet-backbone',
  outputs: [CENTERNET_BACKBONE_NODE],
  inputShape: [-1, MOBILENET_V2_INPUT_SIZE, MOBILENET_V2_INPUT_SIZE, 3],
};

/**
 * A 224x224 view as the backbone's input: RGB as float 0-255, as the detector is fed (the /255 is in its weights).
 * The view fills the square: nothing is padded.
 */
export function centerNetBackboneInput(view: RgbPixels): Float32Tensor {
  return onBlackSquare(view, MOBILENET_V2_INPUT_SIZE);
}
