import { toPipelineModel, validateProfile } from '../core/pipeline/pipeline-model';
import { PipelineModel } from '../core/pipeline/pipeline-model.type';
import { PipelineProfile } from '../core/pipeline/pipeline-profile.type';
import { InputError } from '../core/input-error';
import { readJsonFile } from './read-json-file';

export function loadProfile(path: string): { profile: PipelineProfile; model: PipelineModel } {
  const raw = readJsonFile(path, 'profile');
  try {
    const profile = validateProfile(raw);
    return { profile, model: toPipelineModel(profile) };
  } catch (error) {
    if (error instanceof InputError) throw new InputError(`${path}: ${error.message}`);
    throw error;
  }
}
