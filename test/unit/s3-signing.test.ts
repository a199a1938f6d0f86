// The e2e S3 client's request signing, checked against AWS's published SigV4 test vector "get-vanilla".
import { describe, expect, it } from '@jest/globals';
import { signV4 } from '../support/s3.ts';

describe('AWS Signature V4', () => {
  it('matches the get-vanilla vector of the AWS test suite', () => {
    const authorization = signV4({
      method: 'GET',
      url: new URL('https://example.amazonaws.com/'),
      body: '',
      headers: { host: 'example.amazonaws.com', 'x-amz-date': '20150830T123600Z' },
      accessKey: 'AKIDEXAMPLE',
      secretKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
      region: 'us-east-1',
      service: 'service',
      amzDate: '20150830T123600Z',
    });
    expect(authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
  });
});
