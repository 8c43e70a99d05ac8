# A test fixture in the shape of UserRL's travelgym/env/utils.py, written for mimesis_gym's tests.
# Only module-level literals are read (with ast); nothing here is ever imported or run.

JUDGE_SEARCH_SYSTEM = "FIXTURE search judge: answer alignment_judgement and alignment_aspect in JSON."
JUDGE_SEARCH_USER = "Request: {agent_request}\nTruth:\n{ground_truth_arguments}"

JUDGE_PROMPT_SYSTEM = "FIXTURE classifier: answer type and preference_id in JSON."
JUDGE_PROMPT_USER = (
    "Scenario: {scenario}\nHistory:\n{conversation_history}\nLatest: {latest_utterance}\nList:\n{preferences_list}"
)

RESPONSE_PREFERENCE_SYSTEM = "FIXTURE preference responder."
RESPONSE_PREFERENCE_USER = "Preference:\n{preference}\nHistory:\n{conversation_history}\nLatest: {latest_utterance}"

RESPONSE_ELICIT_SYSTEM = "FIXTURE proactive responder."
RESPONSE_ELICIT_USER = "Volunteer:\n{preference}\nHistory:\n{conversation_history}\nLatest: {latest_utterance}"

RESPONSE_NATURAL_SYSTEM = "FIXTURE natural responder."
RESPONSE_NATURAL_USER = "History:\n{conversation_history}\nLatest: {latest_utterance}"

OPTION_SCHEMAS = {
    "hotel": "FIXTURE hotel schema line",
    "restaurant": "FIXTURE restaurant schema line",
}


def ignored_helper():
    return "functions are never executed"
