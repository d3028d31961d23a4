import { describe, expect, it } from 'vitest'
import { modelRepoRules, swapPhaseTitles, webhookEventNames } from 'virtual:contract-data'
import { ModelRepo } from '../../../src-main/contract/schemas'
import { SWAP_PHASE_TITLES } from '../../../src-main/contract/models'
import { WebhookEventName } from '../../../src-main/contract/licensing'
import { brokenRule } from '../../../src-renderer/api/textRules'

describe("the build's contract data", () => {
  it('checks a model repo as the contract does, with its first message', () => {
    for (const repo of [
      'Qwen/Qwen3-8B',
      'org/name; rm -rf ~',
      'org/na..me',
      'a--b/c',
      'noslash',
      '-x/y',
      'a/b.c_d-e',
    ]) {
      const parsed = ModelRepo.safeParse(repo)
      expect([repo, brokenRule(modelRepoRules, repo)]).toEqual([
        repo,
        parsed.success ? null : parsed.error.issues[0]!.message,
      ])
    }
  })

  it('carries the labels and enum lists the renderer shows', () => {
    expect(swapPhaseTitles).toEqual(SWAP_PHASE_TITLES)
    expect(webhookEventNames).toEqual(WebhookEventName.options)
  })
})
